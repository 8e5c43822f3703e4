// The inputs of an expert GEMM launch as the CPU replays of the W4A8
// kernels take them: each expert's weights (group scales as the test's
// exponent sets them), their packed codes and scales laid end to end as the
// kernels read them, and the activations (experts x m x k E4M3 codes).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/common/random_values.h"
#include "kernels/gemm/expert_gemm.h"
#include "kernels/gemm/expert_gemm_w4a8_tiling.h"

namespace v41sim::kernels::testing {

struct ExpertOperands {
  std::vector<uint8_t> activations, packed, scales;
  std::vector<ExpertWeights> weights;
};

inline ExpertOperands make_expert_operands(const w4a8::Problem& p, uint32_t weight_seed,
                                           uint32_t activation_seed,
                                           const std::function<int(int64_t, int64_t, int64_t)>& exponent) {
  ExpertOperands o;
  o.weights = scaled_expert_weights(p.experts, p.n, p.k, weight_seed, exponent);
  for (const ExpertWeights& w : o.weights) {
    o.packed.insert(o.packed.end(), w.packed.begin(), w.packed.end());
    o.scales.insert(o.scales.end(), w.scales.begin(), w.scales.end());
  }
  o.activations = normal_e4m3_codes(static_cast<std::size_t>(p.experts * p.m * p.k), activation_seed);
  return o;
}

}  // namespace v41sim::kernels::testing
