// AssumptionSensitivity: which of the numbers we assumed move an answer, and
// by how much. Every `{value: X, assumed: ...}` in the files a served run
// reads (model, deployment, workload, GPU profiles, kernel-model calibration)
// is moved down and up by a swing (25% unless asked), one at a time, and the
// run is served again through the same loaders (figure_moves.h): a moved
// value the loader rejects says so instead. The user learns which
// assumptions their $ per token and TPOT rest on, and which could be anything
// without changing them. Other kinds of sourced figure (datasheet,
// published, ...) can be moved too.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/common/figure_moves.h"
#include "sim/costing/served_run.h"

namespace v41sim {

using SensitivitySide = MovedSide<ServedRun>;

struct AssumptionEffect {
  SourcedNumber figure;
  SensitivitySide low, high;
  // The largest change either side makes to the mean $ per 1M output tokens
  // (0 where the price is unknown) and to the mean TPOT p99, against the baseline.
  double usd_change = 0;
  double tpot_p99_change_ms = 0;
};

struct Sensitivity {
  ServedRun baseline;
  double swing = 0;
  std::vector<std::string> kinds;         // of the sources whose figures were moved
  std::vector<AssumptionEffect> effects;  // largest $ change first, then largest TPOT change
};

// `serve` loads what the run needs from its files and serves it; `files` are
// those files; the figures moved are those whose source is one of `kinds`;
// `on_moved` hears of each moved run as it ends. Throws as move_each_figure does.
Sensitivity assumption_sensitivity(const std::vector<std::string>& files,
                                   const std::function<ServedRun()>& serve, double swing,
                                   const std::vector<std::string>& kinds = {"assumed"},
                                   const OnMoved<ServedRun>& on_moved = {});

}  // namespace v41sim
