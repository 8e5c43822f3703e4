// Ratio-2 compressor and Engram gather: CPU references against their
// definitions, CUDA kernels against the references where a GPU exists.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/common/random_values.h"
#include "kernels/compress/compress_pool.h"
#include "kernels/engram/engram_gather.h"
#include "kernels/kv_quant/mxfp4_kv_reference.h"
#include "tests/kernels/device_check_support.h"
#include "tests/test_data.h"

namespace v41sim::kernels {
namespace {

// Equal gates pool to the mean of the two tokens; a dominant gate picks its token.
TEST(CompressRatio2, PoolsBySoftmaxOverTheGates) {
  const int64_t tokens = 4;
  const auto kv = normal_values(tokens * 512, 1);
  std::vector<float> score(tokens * 512, 0.0f);
  const std::vector<float> ape(2 * 512, 0.0f);
  for (int d = 0; d < 512; ++d) score[2 * 512 + d] = 100.0f;  // entry 1: token 2 dominates
  const auto entries = compress_ratio2_reference(kv, score, ape, tokens);
  const auto pooled = dequantize_mxfp4_kv_reference(entries, 2, 512);
  std::vector<float> mean(512), second(512);
  for (int d = 0; d < 512; ++d) {
    mean[d] = 0.5f * (kv[d] + kv[512 + d]);
    second[d] = kv[2 * 512 + d];
  }
  const auto mean_q = dequantize_mxfp4_kv_reference(quantize_mxfp4_kv_reference(mean, 1, 512), 1, 512);
  const auto second_q = dequantize_mxfp4_kv_reference(quantize_mxfp4_kv_reference(second, 1, 512), 1, 512);
  for (int d = 0; d < 512; ++d) {
    EXPECT_FLOAT_EQ(pooled[d], mean_q[d]);
    EXPECT_FLOAT_EQ(pooled[512 + d], second_q[d]);
  }
  EXPECT_THROW(compress_ratio2_reference(kv, score, ape, 3), std::invalid_argument);
}

// The position bias of the second slot, large enough, makes every entry take
// its second token, whatever the gates say.
TEST(CompressRatio2, AddsEachSlotsPositionBias) {
  const int64_t tokens = 6;
  const auto kv = normal_values(tokens * 512, 2);
  const auto score = normal_values(tokens * 512, 3);
  std::vector<float> ape(2 * 512, 0.0f);
  for (int d = 0; d < 512; ++d) ape[512 + d] = 200.0f;
  const auto pooled =
      dequantize_mxfp4_kv_reference(compress_ratio2_reference(kv, score, ape, tokens), 3, 512);
  std::vector<float> seconds;
  for (int64_t e = 0; e < 3; ++e)
    seconds.insert(seconds.end(), kv.begin() + (2 * e + 1) * 512, kv.begin() + (2 * e + 2) * 512);
  EXPECT_EQ(pooled, dequantize_mxfp4_kv_reference(quantize_mxfp4_kv_reference(seconds, 3, 512), 3, 512));
}

TEST(EngramGather, CopiesTheRowsAskedFor) {
  const int64_t rows = 1000;
  std::vector<uint8_t> table(rows * kEngramRowBytes);
  for (std::size_t i = 0; i < table.size(); ++i) table[i] = static_cast<uint8_t>(i * 7 + 3);
  const std::vector<int64_t> wanted{5, 999, 0, 5};
  const auto out = engram_gather_reference(table, wanted);
  ASSERT_EQ(out.size(), wanted.size() * kEngramRowBytes);
  for (std::size_t r = 0; r < wanted.size(); ++r) {
    for (int b = 0; b < kEngramRowBytes; ++b) {
      EXPECT_EQ(out[r * kEngramRowBytes + b], table[wanted[r] * kEngramRowBytes + b]);
    }
  }
  EXPECT_THROW(engram_gather_reference(table, {1000}), std::out_of_range);
  // The row size is the model file's Engram row format.
  const ModelAnalysis v41 = testing::analyze("deepseek_v4_1_flash");
  EXPECT_EQ(kEngramRowBytes, v41.spec.cache(v41.spec.engram->row_cache).bytes);
}

TEST(CompressAndEngramCuda, MatchTheReferences) { expect_device_checks({"compress", "engram"}); }

}  // namespace
}  // namespace v41sim::kernels
