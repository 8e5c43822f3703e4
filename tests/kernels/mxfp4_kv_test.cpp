// MXFP4 KV cache codec: the CPU reference against the format's definition and
// the model file, and the CUDA kernel against the reference where a GPU exists.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/common/fp_codec.h"
#include "kernels/common/random_values.h"
#include "kernels/kv_quant/mxfp4_kv_reference.h"
#include "tests/kernels/device_check_support.h"
#include "tests/test_data.h"

namespace v41sim::kernels {
namespace {

TEST(Fp4E2M1, DecodesTheOcpTable) {
  const float expected[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (uint8_t code = 0; code < 8; ++code) {
    EXPECT_EQ(decode_e2m1(code), expected[code]);
    EXPECT_EQ(decode_e2m1(static_cast<uint8_t>(code | 0x8)), -expected[code]);
    EXPECT_EQ(encode_e2m1(expected[code]), code);
  }
  EXPECT_EQ(encode_e2m1(100.0f), 0x7);  // saturates at 6
  EXPECT_EQ(encode_e2m1(2.5f), 0x4);    // tie between 2 and 3 goes to the even code (2)
  EXPECT_EQ(encode_e2m1(-0.2f), 0x0);   // rounds to zero, no negative zero
}

// The midpoint-counting encoder against a search for the nearest magnitude
// (ties to the even code) on a grid finer than every midpoint, and just
// either side of each midpoint.
TEST(Fp4E2M1, EncodesToTheNearestValueTiesToEven) {
  const auto nearest = [](float x) {
    const float a = std::fabs(x);
    int best = a > 6.0f ? 7 : 0;  // beyond 6: saturate (a search would tie in float precision)
    for (int code = 1; code < 8 && best != 7; ++code) {
      const float error = std::fabs(a - decode_e2m1(static_cast<uint8_t>(code)));
      const float best_error = std::fabs(a - decode_e2m1(static_cast<uint8_t>(best)));
      if (error < best_error || (error == best_error && code % 2 == 0)) best = code;
    }
    return static_cast<uint8_t>((x < 0.0f && best != 0 ? 0x8 : 0x0) | best);
  };
  std::vector<float> values;
  for (int i = 0; i <= 8 * 4096; ++i) values.push_back(static_cast<float>(i) / 4096.0f);
  for (float midpoint : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f}) {
    values.push_back(std::nextafter(midpoint, 0.0f));
    values.push_back(std::nextafter(midpoint, 10.0f));
  }
  values.push_back(1e30f);
  values.push_back(INFINITY);
  for (float v : values) {
    ASSERT_EQ(encode_e2m1(v), nearest(v)) << v;
    ASSERT_EQ(encode_e2m1(-v), nearest(-v)) << -v;
  }
  EXPECT_EQ(encode_e2m1(NAN), 0);
}

TEST(Fp8E4M3, EveryFiniteCodeRoundTrips) {
  for (int code = 0; code <= 0x7E; ++code) {
    const float value = decode_e4m3(static_cast<uint8_t>(code));
    EXPECT_EQ(encode_e4m3(value), code) << value;
    if (code > 0) {
      EXPECT_EQ(encode_e4m3(-value), code | 0x80) << value;
    }
  }
  EXPECT_EQ(decode_e4m3(0x7E), 448.0f);
  EXPECT_EQ(encode_e4m3(1e6f), 0x7E);
  EXPECT_EQ(decode_e4m3(0x01), std::ldexp(1.0f, -9));
}

TEST(Mxfp4KvReference, EntrySizeMatchesTheModelFile) {
  const ModelAnalysis v41 = testing::analyze("deepseek_v4_1_flash");
  const int64_t dim = v41.spec.attention.kv_heads * v41.spec.attention.head_dim;
  EXPECT_EQ(mxfp4_entry_bytes(dim), v41.spec.cache(v41.spec.attention.main_cache).bytes);
}

TEST(Mxfp4KvReference, RepresentableValuesRoundTripExactly) {
  // amax = 6 * 2^-2 makes the scale exactly 2^-2; every value is on the grid.
  std::vector<float> kv;
  for (int i = 0; i < 32; ++i) kv.push_back(decode_e2m1(static_cast<uint8_t>(i % 16)) * 0.25f);
  kv[0] = 1.5f;
  const auto cache = quantize_mxfp4_kv_reference(kv, 1, 32);
  EXPECT_EQ(dequantize_mxfp4_kv_reference(cache, 1, 32), kv);
}

TEST(Mxfp4KvReference, ErrorIsBoundedByTheGroupMaximum) {
  const int64_t tokens = 64;
  const int64_t dim = 512;
  const auto kv = normal_values(static_cast<std::size_t>(tokens * dim), 7);
  const auto back = dequantize_mxfp4_kv_reference(quantize_mxfp4_kv_reference(kv, tokens, dim), tokens, dim);
  for (int64_t g = 0; g < tokens * dim / 16; ++g) {
    float amax = 0.0f;
    for (int i = 0; i < 16; ++i) amax = std::max(amax, std::fabs(kv[g * 16 + i]));
    for (int i = 0; i < 16; ++i) {
      // Half the widest E2M1 step (4 -> 6) is amax/6; scale rounding adds at most 1/16.
      EXPECT_LE(std::fabs(kv[g * 16 + i] - back[g * 16 + i]), amax * (1.0f / 6.0f + 1.0f / 16.0f)) << g;
    }
  }
}

TEST(Mxfp4KvReference, ZeroGroupStaysZero) {
  const std::vector<float> zeros(16, 0.0f);
  const auto cache = quantize_mxfp4_kv_reference(zeros, 1, 16);
  EXPECT_EQ(dequantize_mxfp4_kv_reference(cache, 1, 16), zeros);
}

TEST(Mxfp4KvReference, RejectsBadShapes) {
  EXPECT_THROW(quantize_mxfp4_kv_reference(std::vector<float>(24), 1, 24), std::invalid_argument);
}

TEST(Mxfp4KvCuda, MatchesTheReferenceBitForBit) { expect_device_checks({"mxfp4_kv"}); }

}  // namespace
}  // namespace v41sim::kernels
