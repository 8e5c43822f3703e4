// AssumptionSensitivity: which of the numbers we assumed move an answer, and
// by how much. Every `{value: X, assumed: ...}` in the files a served run
// reads (model, deployment, workload, GPU profiles, kernel-model calibration)
// is moved down and up by a swing (25% unless asked), one at a time, and the
// run is served again through the same loaders: a moved value the loader
// rejects says so instead. The user learns which assumptions their $ per
// token and TPOT rest on, and which could be anything without changing them.
// Other kinds of sourced figure (datasheet, published, ...) can be moved too.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/common/yaml_what_if.h"
#include "sim/costing/served_run.h"

namespace v41sim {

struct SensitivitySide {
  double value = 0;      // the assumption moved to this
  std::string rejected;  // what the loader said where it refused the value; empty if it ran
  ServedRun run;
};

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

// `serve` loads what the run needs from its files (through YamlNode::load_file,
// which sees the moved value while it runs) and serves it; `files` are those
// files; the figures moved are those whose source is one of `kinds`
// (kSourceKinds). Integers move to the nearest other integer at least the
// swing away. Throws InputError for a swing outside (0, 1), a kind not in
// kSourceKinds (naming --kinds), or where the baseline itself does not run.
Sensitivity assumption_sensitivity(const std::vector<std::string>& files,
                                   const std::function<ServedRun()>& serve, double swing,
                                   const std::vector<std::string>& kinds = {"assumed"});

}  // namespace v41sim
