#include "kernels/indexer/indexer_reference.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "kernels/indexer/index_key_block.h"

namespace v41sim::kernels {
namespace {

void widen_key(const uint8_t* entry, float* key) {
  for (int i = 0; i < kIndexDim; ++i) key[i] = index_key_value(entry, i);
}

// sum_h w[h] * ReLU(q_h . key) for one query.
float score_key(const float* q, const float* weights, int64_t heads, const float* key) {
  float logit = 0.0f;
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = q + h * kIndexDim;
    float dot = 0.0f;
    for (int i = 0; i < kIndexDim; ++i) dot += qh[i] * key[i];
    logit += weights[h] * std::max(dot, 0.0f);
  }
  return logit;
}

// The queries' E4M3 codes as values (exact).
std::vector<float> query_values(const std::vector<uint8_t>& q) {
  std::vector<float> values(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) values[i] = decode_e4m3(q[i]);
  return values;
}

// How many key sets `keys` holds: one shared by every query, or one a query.
int64_t key_sets(int64_t queries, bool per_query_keys) { return per_query_keys ? queries : 1; }

}  // namespace

std::vector<uint8_t> index_queries_e4m3(const std::vector<float>& values) {
  std::vector<uint8_t> codes(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) codes[i] = encode_e4m3(values[i]);
  return codes;
}

std::vector<uint8_t> quantize_index_keys_reference(const std::vector<float>& values, int64_t keys) {
  if (static_cast<int64_t>(values.size()) != keys * kIndexDim)
    throw std::invalid_argument("index keys: bad shape");
  std::vector<uint8_t> out(static_cast<std::size_t>(keys * kIndexKeyBytes));
  for (int64_t j = 0; j < keys; ++j)
    quantize_index_key(values.data() + j * kIndexDim, out.data() + j * kIndexKeyBytes);
  return out;
}

std::vector<float> indexer_logits_reference(const std::vector<uint8_t>& q, const std::vector<float>& weights,
                                            const std::vector<uint8_t>& keys, int64_t queries, int64_t heads,
                                            int64_t positions, bool per_query_keys) {
  if (static_cast<int64_t>(q.size()) != queries * heads * kIndexDim ||
      static_cast<int64_t>(weights.size()) != queries * heads ||
      static_cast<int64_t>(keys.size()) != key_sets(queries, per_query_keys) * positions * kIndexKeyBytes) {
    throw std::invalid_argument("indexer logits: bad shape");
  }
  std::vector<float> logits(static_cast<std::size_t>(queries * positions));
  std::vector<float> key(kIndexDim);
  const std::vector<float> qv = query_values(q);
  for (int64_t j = 0; j < positions; ++j) {
    for (int64_t t = 0; t < queries; ++t) {
      if (t == 0 || per_query_keys)  // shared keys: widened once for every query
        widen_key(keys.data() + ((per_query_keys ? t * positions : 0) + j) * kIndexKeyBytes, key.data());
      logits[static_cast<std::size_t>(t * positions + j)] =
          score_key(qv.data() + t * heads * kIndexDim, weights.data() + t * heads, heads, key.data());
    }
  }
  return logits;
}

std::vector<uint8_t> key_set_a_query(const std::vector<uint8_t>& keys, int64_t queries,
                                     int64_t request_queries, int64_t positions) {
  const auto set_bytes = static_cast<std::size_t>(positions * kIndexKeyBytes);
  std::vector<uint8_t> out;
  out.reserve(static_cast<std::size_t>(queries) * set_bytes);
  for (int64_t query = 0; query < queries; ++query) {
    const std::size_t first = static_cast<std::size_t>(query / request_queries) * set_bytes;
    out.insert(out.end(), keys.begin() + static_cast<std::ptrdiff_t>(first),
               keys.begin() + static_cast<std::ptrdiff_t>(first + set_bytes));
  }
  return out;
}

std::vector<int32_t> topk_reference(const std::vector<float>& logits, int64_t queries, int64_t positions,
                                    int64_t topk) {
  if (topk > positions || static_cast<int64_t>(logits.size()) != queries * positions) {
    throw std::invalid_argument("topk: bad shape");
  }
  std::vector<int32_t> out;
  out.reserve(static_cast<std::size_t>(queries * topk));
  std::vector<int32_t> order(static_cast<std::size_t>(positions));
  for (int64_t t = 0; t < queries; ++t) {
    const float* row = logits.data() + t * positions;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + topk, order.end(), [row](int32_t a, int32_t b) {
      const uint32_t ka = ordered_bits(row[a]);
      const uint32_t kb = ordered_bits(row[b]);
      return ka != kb ? ka > kb : a < b;
    });
    std::sort(order.begin(), order.begin() + topk);
    out.insert(out.end(), order.begin(), order.begin() + topk);
  }
  return out;
}

std::vector<float> block_max_reference(const std::vector<float>& logits, int64_t queries, int64_t positions,
                                       int64_t block_size) {
  if (block_size <= 0 || static_cast<int64_t>(logits.size()) != queries * positions)
    throw std::invalid_argument("block max: bad shape");
  const int64_t blocks = (positions + block_size - 1) / block_size;
  std::vector<float> out(static_cast<std::size_t>(queries * blocks), -std::numeric_limits<float>::infinity());
  for (int64_t t = 0; t < queries; ++t) {
    for (int64_t j = 0; j < positions; ++j) {
      float& m = out[static_cast<std::size_t>(t * blocks + j / block_size)];
      m = std::max(m, logits[static_cast<std::size_t>(t * positions + j)]);
    }
  }
  return out;
}

std::vector<int32_t> candidate_pool_reference(const std::vector<float>& block_max, int64_t queries,
                                              int64_t blocks, int64_t top_blocks) {
  return topk_reference(block_max, queries, blocks, std::min(top_blocks, blocks));
}

std::vector<float> pool_logits_reference(const std::vector<uint8_t>& q, const std::vector<float>& weights,
                                         const std::vector<uint8_t>& keys, const std::vector<int32_t>& pool,
                                         int64_t queries, int64_t heads, int64_t positions,
                                         int64_t block_size, bool per_query_keys) {
  if (queries <= 0 || pool.size() % static_cast<std::size_t>(queries) != 0 ||
      static_cast<int64_t>(keys.size()) != key_sets(queries, per_query_keys) * positions * kIndexKeyBytes) {
    throw std::invalid_argument("pool logits: bad shape");
  }
  const int64_t pool_blocks = static_cast<int64_t>(pool.size()) / queries;
  const int64_t slots = pool_blocks * block_size;
  std::vector<float> out(static_cast<std::size_t>(queries * slots), -std::numeric_limits<float>::infinity());
  std::vector<float> key(kIndexDim);
  const std::vector<float> qv = query_values(q);
  for (int64_t t = 0; t < queries; ++t) {
    for (int64_t s = 0; s < slots; ++s) {
      const int64_t position =
          int64_t{pool[static_cast<std::size_t>(t * pool_blocks + s / block_size)]} * block_size +
          s % block_size;
      if (position >= positions) continue;
      widen_key(keys.data() + ((per_query_keys ? t * positions : 0) + position) * kIndexKeyBytes, key.data());
      out[static_cast<std::size_t>(t * slots + s)] =
          score_key(qv.data() + t * heads * kIndexDim, weights.data() + t * heads, heads, key.data());
    }
  }
  return out;
}

std::vector<int32_t> pool_topk_reference(const std::vector<float>& pool_logits,
                                         const std::vector<int32_t>& pool, int64_t queries,
                                         int64_t block_size, int64_t topk) {
  const int64_t pool_blocks = static_cast<int64_t>(pool.size()) / queries;
  const int64_t slots = pool_blocks * block_size;
  std::vector<int32_t> selected = topk_reference(pool_logits, queries, slots, topk);
  // Pool blocks are ascending, so ascending slots map to ascending positions.
  for (int64_t t = 0; t < queries; ++t) {
    for (int64_t i = 0; i < topk; ++i) {
      int32_t& s = selected[static_cast<std::size_t>(t * topk + i)];
      s = static_cast<int32_t>(pool[static_cast<std::size_t>(t * pool_blocks + s / block_size)] * block_size +
                               s % block_size);
    }
  }
  return selected;
}

}  // namespace v41sim::kernels
