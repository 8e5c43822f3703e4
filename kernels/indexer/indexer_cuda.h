// Host API of the lightning-indexer kernels (plain C++). Same layouts and
// results as indexer_reference.h: logits to float rounding, top-k exactly.
#pragma once

#include <cstdint>
#include <vector>

namespace v41sim::kernels {

std::vector<float> indexer_logits_cuda(const std::vector<float>& q, const std::vector<float>& weights,
                                       const std::vector<uint8_t>& keys, int64_t queries, int64_t heads,
                                       int64_t positions);
std::vector<int32_t> topk_cuda(const std::vector<float>& logits, int64_t queries, int64_t positions,
                               int64_t topk);

// Device-pointer launchers for the measuring harness (no copies, no sync).
void launch_indexer_logits(const float* q, const float* weights, const uint8_t* keys, float* logits,
                           int64_t queries, int64_t heads, int64_t positions);
void launch_topk(const float* logits, int32_t* selected, int64_t queries, int64_t positions, int64_t topk);

}  // namespace v41sim::kernels
