// CPU reference of the lightning indexer (V3.2 DSA / V4 / V4.1):
//   logit(q, j) = sum_h w[q][h] * ReLU(q_h . k_j)
// over FP4 index keys, then the top-k positions per query. Top-k ties go to
// the lower position; the selected positions are returned in ascending order.
#pragma once

#include <cstdint>
#include <vector>

namespace v41sim::kernels {

// values: keys x 128 floats -> keys x 68 bytes.
std::vector<uint8_t> quantize_index_keys_reference(const std::vector<float>& values, int64_t keys);

// q: queries x heads x 128; weights: queries x heads; keys: positions x 68 bytes.
std::vector<float> indexer_logits_reference(const std::vector<float>& q, const std::vector<float>& weights,
                                            const std::vector<uint8_t>& keys, int64_t queries, int64_t heads,
                                            int64_t positions);

// logits: queries x positions -> queries x topk positions (ascending). topk <= positions.
std::vector<int32_t> topk_reference(const std::vector<float>& logits, int64_t queries, int64_t positions,
                                    int64_t topk);

}  // namespace v41sim::kernels
