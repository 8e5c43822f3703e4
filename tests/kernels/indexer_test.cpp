// Lightning indexer: the CPU reference against its definition, and the CUDA
// kernels against the reference where a GPU exists.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "kernels/common/random_values.h"
#include "kernels/indexer/index_key_block.h"
#include "kernels/indexer/indexer_reference.h"
#include "tests/test_data.h"

#ifdef V41SIM_HAVE_CUDA_KERNELS
#include "kernels/checks/device_checks.h"
#include "kernels/kv_quant/mxfp4_kv_cuda.h"
#endif

namespace v41sim::kernels {
namespace {

TEST(IndexKey, EntrySizeMatchesTheModelFile) {
  const ModelAnalysis v41 = testing::analyze("deepseek_v4_1_flash");
  EXPECT_EQ(kIndexKeyBytes, v41.spec.cache(v41.spec.attention.indexer->key_cache).bytes);
  EXPECT_EQ(kIndexDim, v41.spec.attention.indexer->head_dim);
}

TEST(IndexKey, QuantizationErrorIsBounded) {
  const auto values = normal_values(kIndexDim * 64, 3);
  const auto keys = quantize_index_keys_reference(values, 64);
  for (int64_t j = 0; j < 64; ++j) {
    for (int g = 0; g < kIndexDim / kIndexScaleGroup; ++g) {
      float amax = 0;
      for (int i = 0; i < kIndexScaleGroup; ++i)
        amax = std::max(amax, std::fabs(values[j * kIndexDim + g * 32 + i]));
      for (int i = g * 32; i < g * 32 + 32; ++i) {
        // Power-of-two scale: the E2M1 grid spacing near the top is at most amax * 2/3 (step 2 of 6, scale <=
        // 2x).
        EXPECT_LE(std::fabs(values[j * kIndexDim + i] - index_key_value(keys.data() + j * kIndexKeyBytes, i)),
                  amax * (1.0f / 3.0f) + 1e-6f);
      }
    }
  }
}

TEST(IndexerReference, LogitsFollowTheDefinition) {
  const int64_t queries = 3, heads = 4, positions = 50;
  const auto q = normal_values(static_cast<std::size_t>(queries * heads * kIndexDim), 5);
  auto w = normal_values(static_cast<std::size_t>(queries * heads), 6);
  const auto keys = quantize_index_keys_reference(
      normal_values(static_cast<std::size_t>(positions * kIndexDim), 7), positions);
  const auto logits = indexer_logits_reference(q, w, keys, queries, heads, positions);
  // One entry by hand.
  const int64_t t = 2, j = 17;
  double expected = 0;
  for (int64_t h = 0; h < heads; ++h) {
    double dot = 0;
    for (int i = 0; i < kIndexDim; ++i)
      dot += q[(t * heads + h) * kIndexDim + i] * index_key_value(keys.data() + j * kIndexKeyBytes, i);
    expected += w[t * heads + h] * std::max(dot, 0.0);
  }
  EXPECT_NEAR(logits[t * positions + j], expected, 1e-3 * std::max(1.0, std::fabs(expected)));
}

TEST(IndexerReference, TopkSelectsTheLargestAndBreaksTiesByPosition) {
  const std::vector<float> row{1.0f, 5.0f, 3.0f, 5.0f, 3.0f, 3.0f, -1.0f, 4.0f};
  const auto top = topk_reference(row, 1, 8, 4);
  EXPECT_EQ(top, (std::vector<int32_t>{1, 2, 3, 7}));  // 5, 5, 4, then the first 3
  const auto logits = normal_values(4 * 10000, 9);
  const auto selected = topk_reference(logits, 4, 10000, 512);
  for (int64_t t = 0; t < 4; ++t) {
    const std::set<int32_t> chosen(selected.begin() + t * 512, selected.begin() + (t + 1) * 512);
    ASSERT_EQ(chosen.size(), 512u);
    float min_chosen = INFINITY, max_other = -INFINITY;
    for (int32_t j = 0; j < 10000; ++j) {
      const float x = logits[t * 10000 + j];
      if (chosen.count(j)) {
        min_chosen = std::min(min_chosen, x);
      } else {
        max_other = std::max(max_other, x);
      }
    }
    EXPECT_GE(min_chosen, max_other);
    EXPECT_TRUE(std::is_sorted(selected.begin() + t * 512, selected.begin() + (t + 1) * 512));
  }
}

TEST(IndexerCuda, MatchesTheReference) {
#ifndef V41SIM_HAVE_CUDA_KERNELS
  GTEST_SKIP() << "built without a CUDA compiler; the kernel was not compiled";
#else
  std::string why;
  if (!cuda_device_available(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
  const CheckResult indexer = check_indexer();
  EXPECT_TRUE(indexer.ok) << indexer.detail;
#endif
}

}  // namespace
}  // namespace v41sim::kernels
