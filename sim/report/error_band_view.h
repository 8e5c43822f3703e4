// A step's or a run's error band (sim/cost/error_band.h) as every view shows
// it: one JSON object and one short table cell, so no two outputs disagree.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/cost/error_band.h"

namespace v41sim {

// {known, pct_at_90 (null when unknown), covered_share, published_share, note}
nlohmann::json error_band_json(const ErrorBand& band);

// "±4.2% (on 80%)", "±11.9% (on 89%; published)" where the band is the
// priors' error on published figures, or "none" where no kernel class has one.
std::string error_band_cell(const ErrorBand& band);

}  // namespace v41sim
