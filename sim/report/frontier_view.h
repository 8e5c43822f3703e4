// Views of `v41sim frontier`: every deployment's decode points in one table
// (Pareto points marked), one JSON object, and the chart (SVG) of tokens/s
// per GPU against tokens/s per user.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/costing/decode_frontier.h"
#include "sim/report/table.h"

namespace v41sim {

Table frontier_table(const std::string& model, const std::vector<DecodeFrontier>& frontiers);
nlohmann::json frontier_json(const std::string& model, const std::vector<DecodeFrontier>& frontiers);
std::string frontier_svg(const std::string& model, const std::vector<DecodeFrontier>& frontiers);

}  // namespace v41sim
