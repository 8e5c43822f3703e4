// Expert GEMM (FP8 activations x MXFP4 weights): the CPU reference and, where
// a GPU exists, the widen-to-FP8 + cuBLASLt path against it.
#include "kernels/gemm/expert_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/common/compare.h"
#include "kernels/common/fp_codec.h"
#include "tests/kernels/device_check_support.h"
#include "tests/test_data.h"

namespace v41sim::kernels {
namespace {

TEST(ExpertGemm, WeightBytesMatchTheModelFile) {
  const ModelAnalysis v41 = testing::analyze("deepseek_v4_1_flash");
  const ExpertWeights w = quantize_expert_weights(std::vector<float>(64 * 64, 1.0f), 64, 64);
  const double bytes_per_value = static_cast<double>(w.packed.size() + w.scales.size()) / (64.0 * 64.0);
  EXPECT_DOUBLE_EQ(bytes_per_value, v41.spec.weights.routed_experts.bytes_per_value());
}

TEST(ExpertGemm, ReferenceComputesTheProduct) {
  const int64_t m = 2, n = 3, k = 64;
  std::vector<float> values(n * k);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < k; ++c) values[r * k + c] = static_cast<float>(r + 1) * (c % 2 ? 0.5f : 1.0f);
  }
  const ExpertWeights w = quantize_expert_weights(values, n, k);
  std::vector<uint8_t> a(m * k, encode_e4m3(2.0f));
  const auto d = expert_gemm_reference(a, 0.25f, m, w);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      // 2 x 0.25 x (k/2 x (j+1) + k/2 x (j+1)/2)
      const auto row = static_cast<float>(j + 1);
      EXPECT_FLOAT_EQ(d[i * n + j], 0.5f * (32.0f * row + 16.0f * row));
    }
  }
}

// The diagnosis a failed GEMM check prints: the faulty rows of each 16 (here
// the second eight, in the second expert only) and columns of each 128.
TEST(ExpertGemmCheck, SaysWhichRowsAndColumnsAreOff) {
  const int64_t experts = 2, m = 20, n = 256;
  std::vector<float> want(static_cast<std::size_t>(experts * m * n));
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = static_cast<float>(i % 97) - 48.0f;
  EXPECT_EQ(where_outputs_differ(want, want, m, n), "no output off");
  std::vector<float> got = want;
  for (int64_t row = 0; row < m; ++row) {
    for (int64_t col = 0; col < n; ++col) {
      if (row % 16 >= 8) got[static_cast<std::size_t>((m + row) * n + col)] += 1.0f;
    }
  }
  const std::string said = where_outputs_differ(got, want, m, n);
  EXPECT_NE(said.find("2048 of 10240 outputs off, the first expert 1 row 8 column 0"), std::string::npos)
      << said;
  EXPECT_NE(said.find("rows mod 16 off: 8 of 16, columns mod 128 off: 128 of 128"), std::string::npos)
      << said;
}

TEST(ExpertGemmCuda, MatchesTheReference) {
  expect_device_checks({"expert_gemm", "expert_gemm_w4a8", "expert_gemm_w4a16", "bf16_gemm"});
}

}  // namespace
}  // namespace v41sim::kernels
