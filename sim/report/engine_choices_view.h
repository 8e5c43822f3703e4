// How much a decode step rests on kernels engines may lack: two in the
// indexer (a sequence's drafts sharing its index-key reads, a Reindex layer
// scoring its candidate pool alone), W4A8 routed experts (FP8 math where
// Marlin's W4A16 kernels take BF16) and V4.1's single-pass mHC (where an
// engine runs V4's three kernels) (EngineChoices), and the index keys an
// engine stores where the model file defines another format for them (the FP8
// key of engines without an FP4 indexer). The same step timed under each
// choice, context by context, for the report's assumptions section.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "sim/cost/kernel_cost.h"
#include "sim/graph/step_shape.h"
#include "sim/model/model_analysis.h"
#include "sim/report/table.h"

namespace v41sim {

// `decode` (its context replaced by each of `contexts`) timed as served under
// each choice, its drafts chosen as those kernels would have them, with its
// time per output token; and, where `prefill_context` > 0, the prefill of one
// prompt that long on the same EP group (the experts' math weighs most there:
// W4A16 widens its weights in every tile). `gpu_name` titles the table.
// Writes the times to `json` ("rows": decode; "prefill_rows").
Table engine_choices_table(const ModelAnalysis& model, const KernelCostModel& cost, const StepShape& decode,
                           const std::vector<int64_t>& contexts, int64_t prefill_context,
                           const std::string& gpu_name, nlohmann::json& json);

}  // namespace v41sim
