#include "sim/report/sensitivity_view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "sim/common/catalog.h"
#include "sim/report/run_view.h"

namespace v41sim {
namespace {

// "0.6: $0.741, TPOT p99 61.2 ms, 98.7% within", or why the loader refused it.
std::string side_cell(const SourcedNumber& a, const SensitivitySide& side) {
  const std::string value = a.integer ? fmt::format("{:.0f}", side.value) : fmt::format("{:.4g}", side.value);
  if (!side.rejected.empty()) return value + ": refused (" + side.rejected + ")";
  return fmt::format("{}: {}, TPOT p99 {:.1f} ms, {:.1f}% within", value, output_token_price(side.outcome, 3),
                     side.outcome.spread(&SeedOutcome::tpot_p99_ms).mean, 100 * side.outcome.within_sla());
}

// Neither side that ran changed the figures (a side the loader refused runs nothing).
bool moves_nothing(const AssumptionEffect& e) {
  const bool ran = e.low.rejected.empty() || e.high.rejected.empty();
  return ran && e.usd_change == 0 && e.tpot_p99_change_ms == 0;
}

std::string where(const SourcedNumber& a, const std::string& data_dir) {
  return fmt::format("{}:{}", path_in_data_dir(a.file, data_dir), a.line);
}

nlohmann::json side_json(const SensitivitySide& side) {
  nlohmann::json j{{"value", side.value}};
  if (!side.rejected.empty()) {
    j["rejected"] = side.rejected;
    return j;
  }
  j.update(served_run_json(side.outcome));
  return j;
}

}  // namespace

Table sensitivity_table(const SensitivityReport& r) {
  const Sensitivity& s = r.sensitivity;
  const int pct = static_cast<int>(std::lround(100 * s.swing));
  Table t(fmt::format("{} on {} under '{}': each {} figure moved {}% down and up, one at a time", r.model,
                      r.deployment.name, r.workload.name, fmt::join(s.kinds, " or "), pct),
          {"figure", "where", "as the file says", fmt::format("-{}%", pct), fmt::format("+{}%", pct),
           "largest $ change", "largest TPOT p99 change (ms)"});
  std::vector<std::string> still;
  for (const AssumptionEffect& e : s.effects) {
    const SourcedNumber& a = e.figure;
    if (moves_nothing(e)) {
      still.push_back(fmt::format("{} ({})", a.field, where(a, r.data_dir)));
      continue;
    }
    t.add_row({a.field, where(a, r.data_dir), fmt::format("{} ({}: {})", a.text, a.kind, a.source),
               side_cell(a, e.low), side_cell(a, e.high),
               s.baseline.cost.known ? fmt::format("${:.3f}", e.usd_change) : "-",
               fmt::format("{:.1f}", e.tpot_p99_change_ms)});
  }
  t.add_note(fmt::format(
      "as the files say: {}, TPOT p99 {:.1f} ms, {:.1f}% of the requests within the SLA ({}, {}, "
      "drained); $ per 1M output tokens",
      output_token_price(s.baseline, 3), s.baseline.spread(&SeedOutcome::tpot_p99_ms).mean,
      100 * s.baseline.within_sla(), arrivals_phrase(r.options, r.workload), seeds_phrase(r.options)));
  if (s.baseline.seeds.size() > 1) {
    const SeedSpread tpot = s.baseline.spread(&SeedOutcome::tpot_p99_ms);
    t.add_note(
        fmt::format("the seeds alone move TPOT p99 from {:.1f} to {:.1f} ms: a change smaller than that is "
                    "within the run-to-run spread",
                    tpot.min, tpot.max));
  } else {
    t.add_note(
        "one seed: each moved run but a workload figure's draws its traffic like the baseline, but a change "
        "in step times reorders "
        "events, so small changes are within run-to-run noise (--seeds 3 shows that spread)");
  }
  t.add_note(
      "$ per 1M output tokens charges the deployment's GPU-hours and its SSD tier over the measured window "
      "to "
      "the output tokens served: it moves where serving speed changes how much is served (sessions' next "
      "turns, or a load the "
      "deployment cannot keep up with), not under a light load served in full either way; a workload "
      "figure changes the traffic itself (how much arrives, how long its prompts and answers are)");
  if (!still.empty()) {
    t.add_note(fmt::format("no effect on these figures either way: {}", fmt::join(still, "; ")));
  }
  t.add_note(
      "each moved value goes through the loaders a user's edit would: a value they refuse is shown with "
      "their "
      "message, not clamped");
  return t;
}

nlohmann::json sensitivity_json(const SensitivityReport& r) {
  const Sensitivity& s = r.sensitivity;
  nlohmann::json effects = nlohmann::json::array();
  for (const AssumptionEffect& e : s.effects) {
    const SourcedNumber& a = e.figure;
    effects.push_back(
        {{"field", a.field},
         {"file", path_in_data_dir(a.file, r.data_dir)},
         {"line", a.line},
         {"value", a.value},
         {"kind", a.kind},
         {"source", a.source},
         {"low", side_json(e.low)},
         {"high", side_json(e.high)},
         {"usd_change", s.baseline.cost.known ? nlohmann::json(e.usd_change) : nlohmann::json(nullptr)},
         {"tpot_p99_change_ms", e.tpot_p99_change_ms}});
  }
  const nlohmann::json baseline = served_run_json(s.baseline);
  return {{"model", r.model},
          {"deployment", r.deployment.name},
          {"workload", r.workload.name},
          {"warm_up_s", warm_up_of(r.options, r.workload)},
          {"duration_s", r.options.duration_s},
          {"seed", r.options.seed},
          {"seeds", r.options.seeds},
          {"swing", s.swing},
          {"baseline", baseline},
          {"kinds", s.kinds},
          {"figures", effects}};
}

}  // namespace v41sim
