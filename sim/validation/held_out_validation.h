// Our own held-out measurements as validation references: for every GPU with
// committed measurements (validation/measurements/<gpu>/) and its fitted
// calibration (validation/calibration/<gpu>.yaml), each shape the fit held
// out (calibration_fit.h's split), and every shape of the link-timed classes
// the fit leaves alone, predicted with that calibration against what was
// measured. The tolerance is the calibration target: 5% per shape.
#pragma once

#include <vector>

#include "sim/common/catalog.h"
#include "sim/validation/published_reference.h"

namespace v41sim {

inline constexpr double kHeldOutTolerancePct = 5.0;

std::vector<ValidationRow> validate_held_out_measurements(const Catalog& catalog);

}  // namespace v41sim
