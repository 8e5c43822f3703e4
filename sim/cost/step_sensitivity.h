// StepSensitivity: which sourced figures (by default the assumed ones) move
// one step's time on the kernel model, and by how much: each moved down and
// up in turn (figure_moves.h). Until our measurements calibrate the model,
// the figures at the top are the ones to measure first.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/common/figure_moves.h"

namespace v41sim {

struct StepEffect {
  SourcedNumber figure;
  MovedSide<double> low, high;  // the step's time in us on each side
  double change_pct = 0;        // the larger change of the two, of the baseline
};

struct StepSensitivity {
  double baseline_us = 0;
  double swing = 0;
  std::vector<std::string> kinds;
  std::vector<StepEffect> effects;  // largest change first
};

// `step_us` loads what it reads from `files` and times the step. Throws as
// move_each_figure does.
StepSensitivity step_sensitivity(const std::vector<std::string>& files,
                                 const std::function<double()>& step_us, double swing,
                                 const std::vector<std::string>& kinds = {"assumed"});

}  // namespace v41sim
