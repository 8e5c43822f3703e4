#include "sim/cost/step_sensitivity.h"

#include <algorithm>
#include <cmath>

namespace v41sim {

StepSensitivity step_sensitivity(const std::vector<std::string>& files,
                                 const std::function<double()>& step_us, double swing,
                                 const std::vector<std::string>& kinds) {
  FigureMoves<double> moves = move_each_figure(files, step_us, swing, kinds);
  StepSensitivity out{moves.baseline, swing, kinds, {}};
  for (MovedFigure<double>& m : moves.figures) {
    StepEffect e{std::move(m.figure), std::move(m.low), std::move(m.high)};
    for (const MovedSide<double>* side : {&e.low, &e.high}) {
      if (side->rejected.empty() && out.baseline_us > 0)
        e.change_pct = std::max(e.change_pct, 100 * std::fabs(side->outcome / out.baseline_us - 1));
    }
    out.effects.push_back(std::move(e));
  }
  std::stable_sort(out.effects.begin(), out.effects.end(),
                   [](const StepEffect& a, const StepEffect& b) { return a.change_pct > b.change_pct; });
  return out;
}

}  // namespace v41sim
