// The W4A16 expert GEMM's tiling and fragment loads (expert_gemm_w4a16_cuda.cu)
// as plain host-and-device functions, for the kernel and a CPU test that
// replays it CTA by CTA with an emulated mma.
//
// W4A16 is how Marlin's MoE kernels run V4's FP4 experts on Hopper: BF16
// activations on BF16 tensor cores (mma.sync.m16n8k16), the weights widened
// from E2M1 to BF16 in registers with their group's E8M0 scale multiplied in
// (exact: a power of two times a value of 2 significant bits), so no
// promotion pass is needed. The CTA layout and the copies are the W4A8
// kernel's (expert_gemm_w4a8_tiling.h), with activations of two bytes a value.
//
// K order: a dot product does not depend on the order of its k terms, so a
// lane's four k values of a 16-wide step are 4p..4p+3 (p = lane % 4) for A
// and B alike, where the PTX layout names 2p, 2p+1 and 2p+8, 2p+9. Then a
// lane's B registers are four consecutive FP4 codes (two bytes, one widening)
// and its A registers for a row are eight consecutive bytes (one 8-byte load,
// which the 288-byte row stride keeps free of bank conflicts).
#pragma once

#include <cstdint>

#include "kernels/common/fp_codec.h"
#include "kernels/common/host_device.h"
#include "kernels/common/mma_fragments.h"
#include "kernels/common/mma_fragments_e4m3.h"
#include "kernels/gemm/expert_gemm.h"
#include "kernels/gemm/expert_gemm_w4a8_tiling.h"

namespace v41sim::kernels::w4a16 {

using w4a8::activation_copy;
using w4a8::Copy;
using w4a8::CtaOrigin;
using w4a8::kBlockK;
using w4a8::kBlockN;
using w4a8::kChunkBytes;
using w4a8::kGroupsPerBlock;
using w4a8::Problem;
using w4a8::scale_copy;
using w4a8::tile_col;
using w4a8::tile_row;
using w4a8::weight_copy;

inline constexpr int kActivationBytes = 2;
inline constexpr int kStepsPerBlock = kBlockK / mma::kK;
static_assert(kWeightScaleGroup % mma::kK == 0, "a k16 step lies within one scale group");

// Decode: a few rows per expert, a deep pipeline and several CTAs per SM to
// keep weight bytes in flight; more rows: fuller tiles, two stages (the 48 KB
// of static shared memory a CTA may hold).
using Rows16 = w4a8::Tiling<1, 4, 1, 2, 4, 4, kActivationBytes>;
using Rows64 = w4a8::Tiling<2, 2, 2, 4, 2, 2, kActivationBytes>;
static_assert(Rows16::a_stride == 288 && Rows64::a_stride == 288, "8-byte A loads free of bank conflicts");

// The CTA's activation rows for an expert of m rows; above 64 the launch tiles M by 64.
inline int block_rows(int64_t m) { return m <= Rows16::block_m ? Rows16::block_m : Rows64::block_m; }

// A's four registers for the 16 x 16 block at (row0, k0) of a row-major BF16
// tile (stride in bytes): rows g and g + 8, k 4p..4p+3, one 8-byte load each.
V41_HD void load_a(const uint8_t* tile, int stride, int row0, int k0, mma::Lane l, uint32_t (&a)[4]) {
  V41_UNROLL
  for (int half = 0; half < 2; ++half) {
    const WordPair w =
        load_word_pair(tile + (row0 + l.group + 8 * half) * stride + (k0 + 4 * l.pair) * kActivationBytes);
    a[half] = w.low;       // k 4p, 4p+1: where the PTX layout takes k 2p, 2p+1
    a[2 + half] = w.high;  // k 4p+2, 4p+3: where it takes k 2p+8, 2p+9
  }
}

// B's two registers for weight row n0 + g, k 4p..4p+3 of the 16-wide step at
// k0: two bytes of packed E2M1 codes (n-major rows of `stride` bytes), widened
// to BF16 times the row's scale for the group k0 lies in (scale_tile: each
// row's kGroupsPerBlock codes of the k-block).
V41_HD void load_b(const uint8_t* packed_tile, int stride, const uint8_t* scale_tile, int n0, int k0,
                   mma::Lane l, uint32_t (&b)[2]) {
  const int row = n0 + l.group;
  const uint16_t codes = mma::e4m3::load_pair_bytes(packed_tile + row * stride + (k0 + 4 * l.pair) / 2);
  const uint32_t scale = e8m0_as_bf16(scale_tile[row * kGroupsPerBlock + k0 / kWeightScaleGroup]);
  widen_e2m1x4_to_bf16x4(codes, scale | (scale << 16), b);
}

}  // namespace v41sim::kernels::w4a16
