#include "kernels/indexer/indexer_reference.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "kernels/indexer/index_key_block.h"

namespace v41sim::kernels {

std::vector<uint8_t> quantize_index_keys_reference(const std::vector<float>& values, int64_t keys) {
  if (static_cast<int64_t>(values.size()) != keys * kIndexDim)
    throw std::invalid_argument("index keys: bad shape");
  std::vector<uint8_t> out(static_cast<std::size_t>(keys * kIndexKeyBytes));
  for (int64_t j = 0; j < keys; ++j)
    quantize_index_key(values.data() + j * kIndexDim, out.data() + j * kIndexKeyBytes);
  return out;
}

std::vector<float> indexer_logits_reference(const std::vector<float>& q, const std::vector<float>& weights,
                                            const std::vector<uint8_t>& keys, int64_t queries, int64_t heads,
                                            int64_t positions) {
  if (static_cast<int64_t>(q.size()) != queries * heads * kIndexDim ||
      static_cast<int64_t>(weights.size()) != queries * heads ||
      static_cast<int64_t>(keys.size()) != positions * kIndexKeyBytes) {
    throw std::invalid_argument("indexer logits: bad shape");
  }
  std::vector<float> logits(static_cast<std::size_t>(queries * positions));
  std::vector<float> key(kIndexDim);
  for (int64_t j = 0; j < positions; ++j) {
    for (int i = 0; i < kIndexDim; ++i)
      key[static_cast<std::size_t>(i)] = index_key_value(keys.data() + j * kIndexKeyBytes, i);
    for (int64_t t = 0; t < queries; ++t) {
      float logit = 0.0f;
      for (int64_t h = 0; h < heads; ++h) {
        const float* qh = q.data() + (t * heads + h) * kIndexDim;
        float dot = 0.0f;
        for (int i = 0; i < kIndexDim; ++i) dot += qh[i] * key[static_cast<std::size_t>(i)];
        logit += weights[static_cast<std::size_t>(t * heads + h)] * std::max(dot, 0.0f);
      }
      logits[static_cast<std::size_t>(t * positions + j)] = logit;
    }
  }
  return logits;
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

}  // namespace v41sim::kernels
