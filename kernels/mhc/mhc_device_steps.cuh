// The device steps both mHC single passes and the three-kernel form share:
// the merge and the block input on 16-byte vectors of the four streams, and
// the projection's warp-level steps on the tensor cores with their sums.
#pragma once

#include <cuda_runtime.h>

#include "kernels/common/mma_sync.cuh"
#include "kernels/common/vector_access.cuh"
#include "kernels/mhc/mhc_coefficient_lanes.h"
#include "kernels/mhc/mhc_coefficients.h"
#include "kernels/mhc/mhc_projection_tiles.h"
#include "kernels/mhc/mhc_tile_layout.h"

namespace v41sim::kernels::mhc_steps {

// Element e of a vector of each stream, as the coefficient functions take it.
__device__ inline void streams_at(const float (&x)[kStreams][kStreamVector], int e, float (&out)[kStreams]) {
#pragma unroll
  for (int s = 0; s < kStreams; ++s) out[s] = x[s][e];
}

// Stream d after the block for 8 values, rounded to BF16 as stored.
__device__ inline uint4 merged_vector(const float* c, int d, const float (&x)[kStreams][kStreamVector],
                                      const float (&y)[kStreamVector]) {
  float out[kStreamVector];
#pragma unroll
  for (int e = 0; e < kStreamVector; ++e) {
    float xs[kStreams];
    streams_at(x, e, xs);
    out[e] = mhc_merged(c, d, y[e], xs);
  }
  return pack_bf16x8(out);
}

// The block input for 8 values, rounded to BF16.
__device__ inline uint4 block_input_vector(const float* c, const float (&x)[kStreams][kStreamVector]) {
  float out[kStreamVector];
#pragma unroll
  for (int e = 0; e < kStreamVector; ++e) {
    float xs[kStreams];
    streams_at(x, e, xs);
    out[e] = mhc_block_input(c, xs);
  }
  return pack_bf16x8(out);
}

// Block i's merge at vector `at` of a token: its four streams' vectors
// (`stream_stride` vectors apart) with the block output's, merged.
__device__ inline void merge_at(const float* c, const uint4* streams, int64_t stream_stride,
                                const uint4* output, int64_t at, uint4 (&merged)[kStreams]) {
  float x[kStreams][kStreamVector], yv[kStreamVector];
#pragma unroll
  for (int s = 0; s < kStreams; ++s) unpack_bf16x8(streams[stream_vector(stream_stride, s, at)], x[s]);
  unpack_bf16x8(output[at], yv);
#pragma unroll
  for (int d = 0; d < kStreams; ++d) merged[d] = merged_vector(c, d, x, yv);
}

// The block input at vector `at`, from four streams `stream_stride` vectors apart.
__device__ inline uint4 block_input_at(const float* c, const uint4* streams, int64_t stream_stride,
                                       int64_t at) {
  float x[kStreams][kStreamVector];
#pragma unroll
  for (int s = 0; s < kStreams; ++s) unpack_bf16x8(streams[stream_vector(stream_stride, s, at)], x[s]);
  return block_input_vector(c, x);
}

// A token's coefficients copied out of shared memory once, so the element
// loops read registers (each output value takes five of them).
struct TokenCoefficients {
  float values[kCoefficients];
};
__device__ inline TokenCoefficients coefficients_of(const float* shared) {
  TokenCoefficients token;
#pragma unroll
  for (int j = 0; j < kCoefficients; ++j) token.values[j] = shared[j];
  return token;
}

// One warp's k16 steps of the projection of token rows [0, 16 kMTiles) of
// `tile`, and each row's squares from the same fragments (the values as
// stored, BF16, as the released model's norm reads them).
template <int kMTiles>
__device__ inline void project_steps(const uint16_t* tile, int64_t stride, int rows, const uint16_t* fn,
                                     int64_t k, StepRange range, mma::Lane l,
                                     float (&acc)[kMTiles][kMixTiles][4], float (&squares)[kMTiles][2]) {
  for (int64_t step = range.begin; step < range.end; ++step) {
    const int64_t k0 = step * mma::kK;
    uint32_t b[kMixTiles][2];
#pragma unroll
    for (int nt = 0; nt < kMixTiles; ++nt) {
#pragma unroll
      for (int reg = 0; reg < 2; ++reg) b[nt][reg] = fn_fragment(fn, k, nt, k0, l, reg);
    }
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      uint32_t a[4];
#pragma unroll
      for (int reg = 0; reg < 4; ++reg) {
        a[reg] = token_fragment(tile, stride, rows, mt * mma::kM, k0, l, reg);
        squares[mt][reg & 1] += pair_squares(a[reg]);
      }
#pragma unroll
      for (int nt = 0; nt < kMixTiles; ++nt) mma::mma_bf16_16816(acc[mt][nt], a, b[nt]);
    }
  }
}

// A warp's sums into its rows of `dest`: the dot products, and each row's
// squares, which lie with the 4 lanes of its group (rows at or past `rows`
// dropped). All lanes take part (the shuffles).
template <int kMTiles, int kRows>
__device__ inline void store_sums(float (&dest)[kRows][kProjectionSums],
                                  const float (&acc)[kMTiles][kMixTiles][4],
                                  const float (&squares)[kMTiles][2], mma::Lane l, int rows) {
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int nt = 0; nt < kMixTiles; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int row = mt * mma::kM + mma::c_row(l, i);
        if (row < rows) dest[row][nt * mma::kN + mma::c_col(l, i)] = acc[mt][nt][i];
      }
    }
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float sum = squares[mt][half];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int row = mt * mma::kM + l.group + half * 8;
      if (l.pair == 0 && row < rows) dest[row][kMixes] = sum;
    }
  }
}

// The coefficients of a tile's `rows` tokens from their sums, 16 lanes a
// token (mhc_coefficients_by_lane, the threads coefficient_lane picks). The
// caller synchronises before and after.
template <int kRows>
__device__ inline void finish_coefficients(const float (&sums)[kRows][kProjectionSums], int rows,
                                           float values, const MhcScales& p,
                                           float (&c)[kRows][kCoefficients]) {
  const CoefficientLane at = coefficient_lane(static_cast<int>(threadIdx.x), rows);
  if (!at.takes_part) return;
  mhc_coefficients_by_lane(
      sums[at.row], values, p, at.lane, at.stores ? c[at.row] : nullptr,
      [](float value, int from) { return __shfl_sync(0xffffffffu, value, from, kCoefficientLanes); });
}

// Sum `i` of the CTA's rows (row i / kProjectionSums), over its warps.
template <int kWarps, int kRows>
__device__ inline float sum_over_warps(const float (&partial)[kWarps][kRows][kProjectionSums], int i) {
  float sum = 0.0f;
  for (int w = 0; w < kWarps; ++w) sum += partial[w][i / kProjectionSums][i % kProjectionSums];
  return sum;
}

}  // namespace v41sim::kernels::mhc_steps
