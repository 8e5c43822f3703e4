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

// Index queries come as FP8 E4M3 codes, each head's scale folded into its
// head weight, as DeepGEMM's FP8 MQA-logits kernels take them (q FP8 with FP4
// or FP8 keys); these are the codes of `values` (rounded to nearest).
std::vector<uint8_t> index_queries_e4m3(const std::vector<float>& values);

// q: queries x heads x 128 E4M3 codes; weights: queries x heads; keys:
// positions x 68 bytes shared by every query (a prefill chunk), or with
// `per_query_keys` one such set a query, in query order (a decode batch:
// each query its own request's keys), as the CUDA kernels take them.
std::vector<float> indexer_logits_reference(const std::vector<uint8_t>& q, const std::vector<float>& weights,
                                            const std::vector<uint8_t>& keys, int64_t queries, int64_t heads,
                                            int64_t positions, bool per_query_keys = false);

// Each query's own copy of its request's key set, from one set (positions x
// 68 bytes) a request of `request_queries` queries in a row (a decode
// request's token and the drafts it verifies), as per_query_keys takes them.
std::vector<uint8_t> key_set_a_query(const std::vector<uint8_t>& keys, int64_t queries,
                                     int64_t request_queries, int64_t positions);

// logits: queries x positions -> queries x topk positions (ascending). topk <= positions.
std::vector<int32_t> topk_reference(const std::vector<float>& logits, int64_t queries, int64_t positions,
                                    int64_t topk);

// Hierarchical candidate pool (built at layer 20, used by the Reindex layers).
// block_max: the largest logit of each block of `block_size` positions
// (queries x ceil(positions / block_size); a short last block counts what it has).
std::vector<float> block_max_reference(const std::vector<float>& logits, int64_t queries, int64_t positions,
                                       int64_t block_size);

// The pool: per query, the `top_blocks` blocks with the largest maxima, block
// ids ascending (ties to the lower block); every block when there are no more.
std::vector<int32_t> candidate_pool_reference(const std::vector<float>& block_max, int64_t queries,
                                              int64_t blocks, int64_t top_blocks);

// Reindex scoring restricted to the pool: per query, slot s holds the logit of
// position pool[s / block_size] * block_size + s % block_size (pool_blocks x
// block_size slots; slots past the last position hold -infinity).
// Keys shared or one set a query, as indexer_logits_reference takes them.
std::vector<float> pool_logits_reference(const std::vector<uint8_t>& q, const std::vector<float>& weights,
                                         const std::vector<uint8_t>& keys, const std::vector<int32_t>& pool,
                                         int64_t queries, int64_t heads, int64_t positions,
                                         int64_t block_size, bool per_query_keys = false);

// Top-k of the pool logits, returned as positions (ascending; ties to the lower position).
std::vector<int32_t> pool_topk_reference(const std::vector<float>& pool_logits,
                                         const std::vector<int32_t>& pool, int64_t queries,
                                         int64_t block_size, int64_t topk);

}  // namespace v41sim::kernels
