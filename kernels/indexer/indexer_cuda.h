// Host API of the lightning-indexer kernels (plain C++). Same layouts and
// results as indexer_reference.h: logits to float rounding, top-k exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/indexer/topk_cuda.h"

namespace v41sim::kernels {

// The logits run on the FP32 units (the correctness-first baseline) or on
// tensor cores (BF16 mma.sync: keys and the E4M3 queries widen exactly).
enum class IndexerMath { kFp32Units, kTensorCores };

std::vector<float> indexer_logits_cuda(const std::vector<uint8_t>& q, const std::vector<float>& weights,
                                       const std::vector<uint8_t>& keys, int64_t queries, int64_t heads,
                                       int64_t positions, IndexerMath math = IndexerMath::kFp32Units);

// Keys: key sets of `positions` x 68 bytes, one a decode request, read by
// its request_queries queries in a row (its token and the drafts it
// verifies; 1: each query its own request); or, with kOneKeySet, one
// sequence's set read by every query (a prefill chunk).
inline constexpr int64_t kOneKeySet = 0;
//
// Hierarchical candidate pool (blocks of kV41PoolBlockSize positions). Layer 20
// writes each block's max logit in the same pass as the logits; the pool is the
// top-k of those maxima (topk_cuda); Reindex layers score pooled positions only.
struct LogitsWithBlockMax {
  std::vector<float> logits;     // queries x positions
  std::vector<float> block_max;  // queries x ceil(positions / block)
};
LogitsWithBlockMax indexer_logits_with_block_max_cuda(const std::vector<uint8_t>& q,
                                                      const std::vector<float>& weights,
                                                      const std::vector<uint8_t>& keys, int64_t queries,
                                                      int64_t heads, int64_t positions,
                                                      int64_t request_queries, IndexerMath math);
std::vector<float> indexer_pool_logits_cuda(const std::vector<uint8_t>& q, const std::vector<float>& weights,
                                            const std::vector<uint8_t>& keys,
                                            const std::vector<int32_t>& pool, int64_t queries, int64_t heads,
                                            int64_t positions, int64_t request_queries, IndexerMath math);
// Device-pointer launchers for the measuring harness (no copies, no sync).
// block_max may be null (no pool built at this layer).
void launch_indexer_logits(const uint8_t* q, const float* weights, const uint8_t* keys, float* logits,
                           int64_t queries, int64_t heads, int64_t positions, float* block_max = nullptr,
                           int64_t request_queries = kOneKeySet);
void launch_indexer_pool_logits(const uint8_t* q, const float* weights, const uint8_t* keys,
                                const int32_t* pool, float* pool_logits, int64_t queries, int64_t heads,
                                int64_t positions, int64_t pool_blocks, int64_t request_queries);
// The same on tensor cores (heads 1..32): a CTA takes up to 4 queries of one
// key set, so a request's token and drafts read its keys once a CTA.
void launch_indexer_logits_mma(const uint8_t* q, const float* weights, const uint8_t* keys, float* logits,
                               int64_t queries, int64_t heads, int64_t positions, float* block_max,
                               int64_t request_queries);
void launch_indexer_pool_logits_mma(const uint8_t* q, const float* weights, const uint8_t* keys,
                                    const int32_t* pool, float* pool_logits, int64_t queries, int64_t heads,
                                    int64_t positions, int64_t pool_blocks, int64_t request_queries);

// The logits of a prefill chunk (queries sharing one sequence's keys, 32
// heads, no pool) on Hopper's warpgroup MMA with FP8 operands, the keys
// widened to FP8 with their group scales folded in (exact while a key's four
// group scales lie within 2^8; indexer_wgmma_tiles.h). sm_90 devices only
// (cuda_device.h's sm90a_device); throws elsewhere.
void launch_indexer_logits_wgmma(const uint8_t* q, const float* weights, const uint8_t* keys, float* logits,
                                 int64_t queries, int64_t heads, int64_t positions);
std::vector<float> indexer_logits_wgmma_cuda(const std::vector<uint8_t>& q, const std::vector<float>& weights,
                                             const std::vector<uint8_t>& keys, int64_t queries, int64_t heads,
                                             int64_t positions);

// The logits of a decode batch (32 heads) on the same FP8 warpgroup MMA, and
// where block_max is not null each pool block's max in the same pass
// (indexer_wgmma_decode_tiles.h). Each request its own keys (queries /
// request_queries key sets of `positions`), its request_queries queries in
// a row (its token and the drafts it verifies, 1-8) sharing them, each
// scoring all `positions` (no causal mask among a request's last positions:
// as DeepGEMM's paged logits, whose caller masks). sm_90 devices only;
// throws elsewhere.
void launch_indexer_decode_logits_wgmma(const uint8_t* q, const float* weights, const uint8_t* keys,
                                        float* logits, int64_t queries, int64_t heads, int64_t positions,
                                        float* block_max, int request_queries = 1);
LogitsWithBlockMax indexer_decode_logits_wgmma_cuda(const std::vector<uint8_t>& q,
                                                    const std::vector<float>& weights,
                                                    const std::vector<uint8_t>& keys, int64_t queries,
                                                    int64_t heads, int64_t positions,
                                                    int request_queries = 1);
// A Reindex layer's decode logits in the pool (pool_logits_reference's
// result) on the same kernel, one query a request (each query's pool its
// own).
void launch_indexer_decode_pool_logits_wgmma(const uint8_t* q, const float* weights, const uint8_t* keys,
                                             const int32_t* pool, float* pool_logits, int64_t queries,
                                             int64_t heads, int64_t positions, int64_t pool_blocks);
std::vector<float> indexer_decode_pool_logits_wgmma_cuda(const std::vector<uint8_t>& q,
                                                         const std::vector<float>& weights,
                                                         const std::vector<uint8_t>& keys,
                                                         const std::vector<int32_t>& pool, int64_t queries,
                                                         int64_t heads, int64_t positions);

}  // namespace v41sim::kernels
