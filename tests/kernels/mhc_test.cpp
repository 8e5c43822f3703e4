// mHC mixing: coefficient validity, the single pass equal to the three kernels
// composed, and the CUDA single pass against the reference where a GPU exists.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/common/random_values.h"
#include "kernels/mhc/mhc_mixing.h"
#include "tests/kernels/device_check_support.h"

namespace v41sim::kernels {
namespace {

TEST(Mhc, CoefficientsAreNormalised) {
  const auto X = normal_values(3 * kStreams * 64, 1);
  const auto c = mhc_coefficients_reference(X, 3, 64);
  for (int64_t t = 0; t < 3; ++t) {
    const float* a = c.data() + t * kCoefficients;
    const float* B = a + kStreams;
    const float* b = B + kStreams * kStreams;
    float sa = 0, sb = 0;
    for (int s = 0; s < kStreams; ++s) {
      sa += a[s];
      sb += b[s];
      float row = 0, col = 0;
      for (int u = 0; u < kStreams; ++u) {
        row += B[s * kStreams + u];
        col += B[u * kStreams + s];
      }
      EXPECT_NEAR(row, 1.0f, 1e-4f);
      EXPECT_NEAR(col, 1.0f, 1e-5f);
    }
    EXPECT_NEAR(sa, 1.0f, 1e-6f);
    EXPECT_NEAR(sb, 1.0f, 1e-6f);
  }
}

TEST(Mhc, SinglePassEqualsTheThreeKernelsComposed) {
  const int64_t tokens = 5, hidden = 96;
  const auto X = normal_values(tokens * kStreams * hidden, 2);
  const auto y = normal_values(tokens * hidden, 3);
  const auto c = mhc_coefficients_reference(X, tokens, hidden);
  const MhcFusedResult fused = mhc_fused_reference(X, y, c, tokens, hidden);
  const auto merged = mhc_post_merge_reference(X, y, c, tokens, hidden);
  const auto next_c = mhc_coefficients_reference(merged, tokens, hidden);
  EXPECT_EQ(fused.streams, merged);
  EXPECT_EQ(fused.next_coeffs, next_c);
  EXPECT_EQ(fused.next_input, mhc_pre_mix_reference(merged, next_c, tokens, hidden));
}

TEST(MhcCuda, SinglePassMatchesTheReference) { expect_device_checks({"mhc"}); }

}  // namespace
}  // namespace v41sim::kernels
