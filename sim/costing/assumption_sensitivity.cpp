#include "sim/costing/assumption_sensitivity.h"

#include <algorithm>
#include <cmath>

namespace v41sim {
namespace {

double mean_usd(const ServedRun& run) {
  return run.cost.known ? run.spread(&SeedOutcome::usd_per_million_output).mean : 0.0;
}

double mean_tpot(const ServedRun& run) { return run.spread(&SeedOutcome::tpot_p99_ms).mean; }

}  // namespace

Sensitivity assumption_sensitivity(const std::vector<std::string>& files,
                                   const std::function<ServedRun()>& serve, double swing,
                                   const std::vector<std::string>& kinds,
                                   const OnMoved<ServedRun>& on_moved) {
  FigureMoves<ServedRun> moves = move_each_figure(files, serve, swing, kinds, on_moved);
  Sensitivity out{std::move(moves.baseline), swing, kinds, {}};
  for (MovedFigure<ServedRun>& m : moves.figures) {
    AssumptionEffect e{std::move(m.figure), std::move(m.low), std::move(m.high)};
    for (const SensitivitySide* side : {&e.low, &e.high}) {
      if (!side->rejected.empty()) continue;
      e.usd_change = std::max(e.usd_change, std::fabs(mean_usd(side->outcome) - mean_usd(out.baseline)));
      e.tpot_p99_change_ms =
          std::max(e.tpot_p99_change_ms, std::fabs(mean_tpot(side->outcome) - mean_tpot(out.baseline)));
    }
    out.effects.push_back(std::move(e));
  }
  std::stable_sort(out.effects.begin(), out.effects.end(),
                   [](const AssumptionEffect& a, const AssumptionEffect& b) {
                     if (a.usd_change != b.usd_change) return a.usd_change > b.usd_change;
                     return a.tpot_p99_change_ms > b.tpot_p99_change_ms;
                   });
  return out;
}

}  // namespace v41sim
