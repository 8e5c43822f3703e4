#include "sim/costing/assumption_sensitivity.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/common/input_error.h"
#include "sim/common/parallel_for.h"

namespace v41sim {
namespace {

// The value moved by `factor` (1 - swing or 1 + swing), written as the file
// would: an integer stays one, and moves by at least 1.
std::pair<double, std::string> moved(const SourcedNumber& v, double factor) {
  const double target = v.value * factor;
  if (!v.integer) return {target, fmt::format("{:.6g}", target)};
  double rounded = std::round(target);
  if (rounded == v.value) rounded += factor < 1 ? -1 : 1;
  return {rounded, fmt::format("{:.0f}", rounded)};
}

double mean_usd(const ServedRun& run) {
  return run.cost.known ? run.spread(&SeedOutcome::usd_per_million_output).mean : 0.0;
}

double mean_tpot(const ServedRun& run) { return run.spread(&SeedOutcome::tpot_p99_ms).mean; }

}  // namespace

Sensitivity assumption_sensitivity(const std::vector<std::string>& files,
                                   const std::function<ServedRun()>& serve, double swing,
                                   const std::vector<std::string>& kinds) {
  if (!(swing > 0 && swing < 1)) {
    throw InputError({"", 0, "--swing"}, fmt::format("expected a share in (0, 1), got {}", swing));
  }
  if (kinds.empty()) throw InputError({"", 0, "--kinds"}, "expected at least one kind of source");
  for (const std::string& kind : kinds) {
    if (std::find(kSourceKinds.begin(), kSourceKinds.end(), kind) == kSourceKinds.end()) {
      throw InputError({"", 0, "--kinds"},
                       fmt::format("expected kinds among {}, got '{}'", fmt::join(kSourceKinds, ", "), kind));
    }
  }
  Sensitivity out;
  out.swing = swing;
  out.kinds = kinds;
  std::map<std::string, std::string> texts;  // each file's text, read once
  for (const std::string& file : files) {
    if (texts.contains(file)) continue;
    texts[file] = yaml_text(file);
    for (SourcedNumber& v : find_sourced_numbers(file, kinds)) out.effects.push_back({std::move(v), {}, {}});
  }
  out.baseline = serve();
  // Both sides of every assumption, on all cores: each job writes its own side.
  parallel_for(2 * out.effects.size(), [&](std::size_t job) {
    AssumptionEffect& effect = out.effects[job / 2];
    SensitivitySide& side = job % 2 == 0 ? effect.low : effect.high;
    const auto [value, text] = moved(effect.figure, job % 2 == 0 ? 1 - swing : 1 + swing);
    side.value = value;
    const ScopedYamlOverride edited(effect.figure.file,
                                    with_value_replaced(texts.at(effect.figure.file), effect.figure, text));
    try {
      side.run = serve();
    } catch (const InputError& e) {
      side.rejected = e.detail();  // the file, line and field are the assumption's own
    }
  });
  for (AssumptionEffect& e : out.effects) {
    for (const SensitivitySide* side : {&e.low, &e.high}) {
      if (!side->rejected.empty()) continue;
      e.usd_change = std::max(e.usd_change, std::fabs(mean_usd(side->run) - mean_usd(out.baseline)));
      e.tpot_p99_change_ms =
          std::max(e.tpot_p99_change_ms, std::fabs(mean_tpot(side->run) - mean_tpot(out.baseline)));
    }
  }
  std::stable_sort(out.effects.begin(), out.effects.end(),
                   [](const AssumptionEffect& a, const AssumptionEffect& b) {
                     if (a.usd_change != b.usd_change) return a.usd_change > b.usd_change;
                     return a.tpot_p99_change_ms > b.tpot_p99_change_ms;
                   });
  return out;
}

}  // namespace v41sim
