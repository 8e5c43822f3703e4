// The tensor-core sparse decode's index arithmetic, replayed on the CPU: every
// lane's fragment loads (the same functions the kernel calls) fed to an
// emulated mma.m16n8k16 reproduce plain matrix products, and the BF16
// widening of cache entries is exact, as the kernel assumes.
#include "kernels/common/mma_fragments.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "kernels/attention/sparse_decode_types.h"
#include "kernels/common/fp_codec.h"
#include "kernels/common/random_values.h"
#include "tests/kernels/mma_bf16_emulation.h"

namespace v41sim::kernels {
namespace {

using mma::Lane;
using mma::lane_of;

std::vector<uint16_t> bf16_tile(int rows, int stride, int cols, uint32_t seed) {
  const auto values = normal_values(static_cast<std::size_t>(rows * cols), seed);
  std::vector<uint16_t> tile(static_cast<std::size_t>(rows * stride), 0xFFFF);  // padding poisoned
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) tile[r * stride + c] = mma::to_bf16(values[r * cols + c]);
  }
  return tile;
}

TEST(MmaFragments, EachLaneOwnsDistinctElementsCoveringTheTiles) {
  std::set<std::pair<int, int>> a, b, c;
  for (int lane = 0; lane < 32; ++lane) {
    const Lane l = lane_of(lane);
    for (int r = 0; r < 4; ++r) {
      a.insert({mma::a_row(l, r), mma::a_col(l, r)});
      a.insert({mma::a_row(l, r), mma::a_col(l, r) + 1});
    }
    for (int r = 0; r < 2; ++r) {
      b.insert({mma::b_k(l, r), mma::b_n(l)});
      b.insert({mma::b_k(l, r) + 1, mma::b_n(l)});
    }
    for (int i = 0; i < 4; ++i) c.insert({mma::c_row(l, i), mma::c_col(l, i)});
  }
  EXPECT_EQ(a.size(), 256u);  // 16 x 16, each once
  EXPECT_EQ(b.size(), 128u);  // 16 x 8
  EXPECT_EQ(c.size(), 128u);  // 16 x 8
  EXPECT_EQ(a.rbegin()->first, 15);
  EXPECT_EQ(b.rbegin()->first, 15);
}

TEST(MmaFragments, Bf16RoundsToNearestEvenAndWidensCacheEntriesExactly) {
  EXPECT_EQ(mma::to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(mma::to_bf16(-2.0f), 0xC000);
  EXPECT_EQ(mma::to_bf16(1.0f + 1.0f / 256), 0x3F80);  // halfway: to even
  EXPECT_EQ(mma::to_bf16(1.0f + 3.0f / 256), 0x3F82);  // halfway: to even (up)
  EXPECT_EQ(mma::from_bf16(mma::to_bf16(0.15625f)), 0.15625f);
  // Every FP4 value times every E4M3 scale, and every FP8 value times a power of two: exact in BF16.
  for (int code = 0; code < 16; ++code) {
    for (int scale = 0; scale < 256; ++scale) {
      const float s = decode_e4m3(static_cast<uint8_t>(scale));
      if (!std::isfinite(s)) continue;
      const float v = decode_e2m1(static_cast<uint8_t>(code)) * s;
      EXPECT_EQ(mma::from_bf16(mma::to_bf16(v)), v) << "e2m1 " << code << " x e4m3 " << scale;
    }
  }
  for (int code = 0; code < 256; ++code) {
    const float v = decode_e4m3(static_cast<uint8_t>(code));
    if (!std::isfinite(v)) continue;
    for (int e = 100; e < 150; ++e) {
      const float w = v * decode_e8m0(static_cast<uint8_t>(e));
      EXPECT_EQ(mma::from_bf16(mma::to_bf16(w)), w) << "e4m3 " << code << " x e8m0 " << e;
    }
  }
}

// The indexer's key widening: two FP4 codes times an E8M0 scale straight to
// BF16 bits, for every byte and every scale code, equal to the float product
// rounded to BF16 (exact on the fast path: the scale only moves the exponent).
TEST(MmaFragments, WideningIndexKeysToBf16MatchesTheFloatProduct) {
  for (int scale = 0; scale < 256; ++scale) {
    for (int byte = 0; byte < 256; ++byte) {
      const uint32_t pair = widen_e2m1x2_to_bf16x2(static_cast<uint8_t>(byte), static_cast<uint8_t>(scale));
      for (int i = 0; i < 2; ++i) {
        const float product = decode_e2m1(static_cast<uint8_t>((byte >> (4 * i)) & 0xF)) *
                              decode_e8m0(static_cast<uint8_t>(scale));
        const auto got = static_cast<uint16_t>(pair >> (16 * i));
        ASSERT_EQ(got, mma::to_bf16(product)) << "byte " << byte << " scale " << scale << " element " << i;
        if (scale >= 2 && scale <= 252) {
          ASSERT_EQ(mma::from_bf16(got), product) << "not exact";
        }
      }
    }
  }
}

// The sparse decode's widening of main-KV entries: every 16 bits of E2M1
// codes times every finite E4M3 scale, equal to the per-value decode rounded
// to BF16 (signed zeros included).
TEST(MmaFragments, WideningMainEntriesToBf16MatchesThePerValueDecode) {
  uint8_t entry[kMainEntryBytes] = {};
  for (int scale = 0; scale < 256; ++scale) {
    const float s = decode_e4m3(static_cast<uint8_t>(scale));
    if (!std::isfinite(s)) continue;
    entry[kLatentDim / 2] = static_cast<uint8_t>(scale);
    const uint32_t scale_pair = bf16_bits(s) * 0x10001u;
    for (uint32_t nibbles = 0; nibbles < 0x10000; ++nibbles) {
      entry[0] = static_cast<uint8_t>(nibbles);
      entry[1] = static_cast<uint8_t>(nibbles >> 8);
      uint32_t pairs[2];
      widen_e2m1x4_to_bf16x4(static_cast<uint16_t>(nibbles), scale_pair, pairs);
      for (int i = 0; i < 4; ++i) {
        ASSERT_EQ((pairs[i / 2] >> (16 * (i % 2))) & 0xFFFFu, mma::to_bf16(main_entry_value(entry, i)))
            << "nibbles " << nibbles << " value " << i << " scale " << scale;
      }
    }
  }
}

// The kernel's S = Q.K^T block of one warp: 16 heads from head0 x 32 keys from key0, over 512 dims.
TEST(MmaFragments, ScoreTileLoadsReproduceQTimesKTransposed) {
  constexpr int kStride = kLatentDim + 8, kHeads = 64, kKeys = 64;
  const auto q = bf16_tile(kHeads, kStride, kLatentDim, 1);
  const auto k = bf16_tile(kKeys, kStride, kLatentDim, 2);
  for (const auto& [head0, key0] : {std::pair{0, 0}, std::pair{48, 32}}) {
    float acc[4][32][4] = {};
    for (int k0 = 0; k0 < kLatentDim; k0 += mma::kK) {
      for (int t = 0; t < 4; ++t) {
        testing::emulate_warp_mma(
            acc[t], [&](Lane l, int r) { return mma::load_a(q.data(), kStride, head0, k0, l, r); },
            [&](Lane l, int r) {
              return mma::load_b_n_major(k.data(), kStride, key0 + t * mma::kN, k0, l, r);
            });
      }
    }
    for (int t = 0; t < 4; ++t) {
      for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < 4; ++i) {
          const int h = head0 + mma::c_row(lane_of(lane), i);
          const int key = key0 + t * mma::kN + mma::c_col(lane_of(lane), i);
          double want = 0;
          for (int c = 0; c < kLatentDim; ++c)
            want += double{mma::from_bf16(q[h * kStride + c])} * mma::from_bf16(k[key * kStride + c]);
          EXPECT_NEAR(acc[t][lane][i], want, 1e-3) << "head " << h << " key " << key;
        }
      }
    }
  }
}

// The kernel's O += P.V block of one warp: 16 heads x 256 dims, over a 64-key tile (V = K, k-major).
TEST(MmaFragments, OutputTileLoadsReproducePTimesV) {
  constexpr int kStride = kLatentDim + 8, kProbStride = 64 + 8, kHeads = 64, kKeys = 64;
  const auto p = bf16_tile(kHeads, kProbStride, kKeys, 3);
  const auto v = bf16_tile(kKeys, kStride, kLatentDim, 4);
  const int head0 = 16, dim0 = 256;
  static float acc[32][32][4];
  for (auto& tile : acc) {
    for (auto& lane : tile) {
      for (float& x : lane) x = 0;
    }
  }
  for (int k0 = 0; k0 < kKeys; k0 += mma::kK) {
    for (int t = 0; t < 32; ++t) {
      testing::emulate_warp_mma(
          acc[t], [&](Lane l, int r) { return mma::load_a(p.data(), kProbStride, head0, k0, l, r); },
          [&](Lane l, int r) {
            return mma::load_b_k_major(v.data(), kStride, k0, dim0 + t * mma::kN, l, r);
          });
    }
  }
  for (int t = 0; t < 32; ++t) {
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < 4; ++i) {
        const int h = head0 + mma::c_row(lane_of(lane), i);
        const int dim = dim0 + t * mma::kN + mma::c_col(lane_of(lane), i);
        double want = 0;
        for (int key = 0; key < kKeys; ++key)
          want += double{mma::from_bf16(p[h * kProbStride + key])} * mma::from_bf16(v[key * kStride + dim]);
        EXPECT_NEAR(acc[t][lane][i], want, 1e-3) << "head " << h << " dim " << dim;
      }
    }
  }
}

}  // namespace
}  // namespace v41sim::kernels
