// Claims check: each quantitative claim of the seed article, recomputed from
// the model and hardware files, with a verdict and the assumptions it needs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/common/catalog.h"
#include "sim/common/sourced_value.h"
#include "sim/cost/kernel_cost.h"
#include "sim/hw/gpu_profile.h"
#include "sim/model/model_analysis.h"
#include "sim/report/table.h"

namespace v41sim {

enum class Verdict { kHolds, kDoesNotHold, kHoldsOnlyIf };

struct Claim {
  std::string id;
  std::string statement;  // as the article puts it
  Verdict verdict = Verdict::kDoesNotHold;
  std::string condition;              // for kHoldsOnlyIf: what must be assumed
  std::vector<std::string> findings;  // the derived figures, each with its basis
};

struct ClaimInputs {
  const ModelAnalysis& v41_flash;
  const ModelAnalysis& v4_flash;
  const GpuProfile& h100;
  const GpuProfile& h200;
  SourcedValue reserve_fraction;  // used where the claim is re-done with weights
  // Decode (CUDA-graph replay) on the H20 and the H100, for the claim that
  // the H20 is the better decode GPU.
  const KernelCostModel& h20_decode;
  const KernelCostModel& h100_decode;
  // Decode on an H200 node and a GB200 NVL72 rack, for the claim that EP is
  // best kept within one machine and the rack's NVLink domain no longer pays.
  const KernelCostModel& h200_decode;
  const KernelCostModel& gb200_decode;
};

std::vector<Claim> check_claims(const ClaimInputs& inputs);
// The same on the catalog's bundled files: V4-Flash, the H100 and H200
// profiles, and decode (CUDA-graph replay) on the H20, H100, H200 and GB200
// NVL72; `v41_flash` as the caller has it (the report's model).
std::vector<Claim> check_bundled_claims(const Catalog& catalog, const ModelAnalysis& v41_flash,
                                        const SourcedValue& reserve_fraction);

std::string verdict_text(const Claim& claim);
Table claims_table(const std::vector<Claim>& claims);
nlohmann::json claims_json(const std::vector<Claim>& claims);

}  // namespace v41sim
