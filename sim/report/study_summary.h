// The study's answers in brief: one table at the top of the report that
// repeats, in a line each, the figures the sections below compute (claims'
// verdicts, 1M-token sessions per GPU, decode step times with their bands,
// the cheapest deployment within the SLA, aggregated against disaggregated,
// and how the kernel model fares against published figures). It is read off
// the report's own JSON, so the summary and the sections cannot disagree.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/report/table.h"

namespace v41sim {

// `report`: the study's JSON as write_study_report builds it (claims, fits,
// steps, plan, plan_layouts, validation).
Table study_summary(const nlohmann::json& report);

}  // namespace v41sim
