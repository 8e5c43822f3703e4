// mHC mixing kernels. The three-kernel form reads a site's streams three
// times (the projection, the block input, the merge after the block); the
// single pass reads them once: it merges block i's output into the streams,
// keeps its tokens' merged streams in shared memory while it projects them
// for block i+1's coefficients, and makes block i+1's input from that copy.
// Both project on the tensor cores (mhc_projection_tiles.h). What the single
// pass pays instead is fn: its CTA holds at most 4 tokens, so it reads fn's
// 1 MB (BF16, V4.1) from L2 once for every 1 to 4 tokens, where the
// three-kernel form's projection reads it once for every 32.
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/fp_codec.h"
#include "kernels/common/mma_sync.cuh"
#include "kernels/common/vector_access.cuh"
#include "kernels/mhc/mhc_device_steps.cuh"
#include "kernels/mhc/mhc_mixing.h"
#include "kernels/mhc/mhc_projection_tiles.h"
#include "kernels/mhc/mhc_step_run.h"

namespace v41sim::kernels {
namespace {

using namespace mhc_steps;  // NOLINT: the shared device steps

constexpr int kElementThreads = 128;  // the block input and the merge: a CTA a token

// The three-kernel form's projection: 32 tokens and one of `gridDim.y`
// shares of the reduction a CTA, each warp an equal part of that share; the
// CTA's sums (per token: 24 dot products, then the sum of squares) go to
// the workspace, one set per split.
__global__ void __launch_bounds__(kProjectionWarps * 32)
    projection_kernel(const uint16_t* __restrict__ X, const uint16_t* __restrict__ fn,
                      float* __restrict__ workspace, int64_t tokens, int64_t hidden) {
  __shared__ float partial[kProjectionWarps][kProjectionTokens][kProjectionSums];
  const int64_t k = kStreams * hidden;
  const auto [token0, rows] = tile_span(tokens, kProjectionTokens, blockIdx.x);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const mma::Lane l = mma::lane_of(static_cast<int>(threadIdx.x) % 32);
  const StepRange range =
      projection_warp_steps(k, static_cast<int>(blockIdx.y), static_cast<int>(gridDim.y), warp);
  float acc[kProjectionMTiles][kMixTiles][4] = {};
  float squares[kProjectionMTiles][2] = {};
  project_steps<kProjectionMTiles>(X + token0 * k, k, rows, fn, k, range, l, acc, squares);
  store_sums<kProjectionMTiles, kProjectionTokens>(partial[warp], acc, squares, l, rows);
  __syncthreads();
  float* out = workspace + projection_workspace_offset(static_cast<int>(blockIdx.y), tokens, token0);
  for (int i = static_cast<int>(threadIdx.x); i < rows * kProjectionSums; i += static_cast<int>(blockDim.x))
    out[i] = sum_over_warps(partial, i);
}

// The block input, a CTA a token: the splits' sums finished into the
// coefficients (kept for the merge), then sum_s pre[s] X_s.
__global__ void __launch_bounds__(kElementThreads)
    pre_mix_kernel(const uint16_t* __restrict__ X, const float* __restrict__ workspace, int splits,
                   MhcScales scales, float* __restrict__ coeffs, uint16_t* __restrict__ x_in, int64_t tokens,
                   int64_t hidden) {
  __shared__ float sums[1][kProjectionSums];
  __shared__ float c[1][kCoefficients];
  const int64_t t = blockIdx.x;
  if (threadIdx.x < kProjectionSums) {
    float sum = 0.0f;
    for (int split = 0; split < splits; ++split)
      sum += workspace[projection_workspace_offset(split, tokens, t) + threadIdx.x];
    sums[0][threadIdx.x] = sum;
  }
  __syncthreads();
  finish_coefficients(sums, 1, static_cast<float>(kStreams * hidden), scales, c);
  __syncthreads();
  if (threadIdx.x < kCoefficients) coeffs[t * kCoefficients + threadIdx.x] = c[0][threadIdx.x];
  const TokenCoefficients token = coefficients_of(c[0]);
  const int64_t vectors = hidden / kStreamVector;
  const uint4* streams = reinterpret_cast<const uint4*>(X + t * kStreams * hidden);
  uint4* out = reinterpret_cast<uint4*>(x_in + t * hidden);
  for (int64_t v = threadIdx.x; v < vectors; v += blockDim.x)
    out[v] = block_input_at(token.values, streams, vectors, v);
}

// The merge after the block, a CTA a token.
__global__ void __launch_bounds__(kElementThreads)
    post_merge_kernel(const uint16_t* __restrict__ X, const uint16_t* __restrict__ y,
                      const float* __restrict__ coeffs, uint16_t* __restrict__ X_out, int64_t hidden) {
  __shared__ float c[kCoefficients];
  const int64_t t = blockIdx.x;
  if (threadIdx.x < kCoefficients) c[threadIdx.x] = coeffs[t * kCoefficients + threadIdx.x];
  __syncthreads();
  const TokenCoefficients token = coefficients_of(c);
  const int64_t vectors = hidden / kStreamVector;
  const uint4* streams = reinterpret_cast<const uint4*>(X + t * kStreams * hidden);
  const uint4* output = reinterpret_cast<const uint4*>(y + t * hidden);
  uint4* out = reinterpret_cast<uint4*>(X_out + t * kStreams * hidden);
  for (int64_t v = threadIdx.x; v < vectors; v += blockDim.x) {
    uint4 merged[kStreams];
    merge_at(token.values, streams, vectors, output, v, merged);
#pragma unroll
    for (int d = 0; d < kStreams; ++d) out[stream_vector(vectors, d, v)] = merged[d];
  }
}

// The single pass, kTokens tokens a CTA: (1) block i's merge, to memory and
// into the shared tile (rows of 4H values, padded); (2) block i+1's
// projection of the tile, the 16 warps splitting the reduction; (3) its
// coefficients; (4) its input, from the tile.
template <int kTokens>
__global__ void __launch_bounds__(kFusedWarps * 32, 1)
    fused_kernel(const uint16_t* __restrict__ X, const uint16_t* __restrict__ y,
                 const float* __restrict__ coeffs, MhcSiteDevice next, uint16_t* __restrict__ X_out,
                 uint16_t* __restrict__ next_input, float* __restrict__ next_coeffs, int64_t tokens,
                 int64_t hidden) {
  extern __shared__ uint4 tile_vectors[];
  __shared__ float c[kTokens][kCoefficients];
  __shared__ float partial[kFusedWarps][kTokens][kProjectionSums];
  __shared__ float sums[kTokens][kProjectionSums];
  const uint16_t* tile = reinterpret_cast<const uint16_t*>(tile_vectors);
  const int64_t k = kStreams * hidden;
  const int64_t stride = fused_tile_stride(hidden);
  const int64_t vectors = hidden / kStreamVector;
  const auto [token0, rows] = tile_span(tokens, kTokens, blockIdx.x);
  const int thread = static_cast<int>(threadIdx.x);
  const int warp = thread / 32;
  const mma::Lane l = mma::lane_of(thread % 32);
  for (int i = thread; i < rows * kCoefficients; i += static_cast<int>(blockDim.x))
    c[i / kCoefficients][i % kCoefficients] = coeffs[token0 * kCoefficients + i];
  __syncthreads();

  // (1) The merge.
  for (int r = 0; r < rows; ++r) {
    const TokenCoefficients token = coefficients_of(c[r]);
    const uint4* streams = reinterpret_cast<const uint4*>(X + (token0 + r) * k);
    const uint4* output = reinterpret_cast<const uint4*>(y + (token0 + r) * hidden);
    uint4* out = reinterpret_cast<uint4*>(X_out + (token0 + r) * k);
    uint4* kept = tile_vectors + tile_row_vector(stride, r);
    for (int64_t v = thread; v < vectors; v += blockDim.x) {
      uint4 merged[kStreams];
      merge_at(token.values, streams, vectors, output, v, merged);
#pragma unroll
      for (int d = 0; d < kStreams; ++d) {
        out[stream_vector(vectors, d, v)] = merged[d];
        kept[stream_vector(vectors, d, v)] = merged[d];
      }
    }
  }
  __syncthreads();

  // (2) The projection of the tile.
  float acc[1][kMixTiles][4] = {};
  float squares[1][2] = {};
  project_steps<1>(tile, stride, rows, next.fn, k, step_range(k / mma::kK, warp, kFusedWarps), l, acc,
                   squares);
  store_sums<1, kTokens>(partial[warp], acc, squares, l, rows);
  __syncthreads();

  // (3) Block i+1's coefficients.
  for (int i = thread; i < rows * kProjectionSums; i += static_cast<int>(blockDim.x))
    sums[i / kProjectionSums][i % kProjectionSums] = sum_over_warps(partial, i);
  __syncthreads();
  finish_coefficients(sums, rows, static_cast<float>(k), next.scales, c);
  __syncthreads();
  for (int i = thread; i < rows * kCoefficients; i += static_cast<int>(blockDim.x))
    next_coeffs[token0 * kCoefficients + i] = c[i / kCoefficients][i % kCoefficients];

  // (4) Block i+1's input, from the tile.
  for (int r = 0; r < rows; ++r) {
    const TokenCoefficients token = coefficients_of(c[r]);
    const uint4* kept = tile_vectors + tile_row_vector(stride, r);
    uint4* out = reinterpret_cast<uint4*>(next_input + (token0 + r) * hidden);
    for (int64_t v = thread; v < vectors; v += blockDim.x)
      out[v] = block_input_at(token.values, kept, vectors, v);
  }
}

int64_t fused_tile_bytes(int tokens_per_cta, int64_t hidden) {
  return tokens_per_cta * fused_tile_stride(hidden) * static_cast<int64_t>(sizeof(uint16_t));
}

template <int kTokens>
void launch_fused_with(const uint16_t* X, const uint16_t* y, const float* coeffs, const MhcSiteDevice& next,
                       uint16_t* X_out, uint16_t* next_input, float* next_coeffs, int64_t tokens,
                       int64_t hidden) {
  const int64_t bytes = fused_tile_bytes(kTokens, hidden);
  static int64_t configured = 48 * 1024;  // what a launch may ask without opting in
  if (bytes > configured) {
    CUDA_CHECK(cudaFuncSetAttribute(fused_kernel<kTokens>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(bytes)));
    configured = bytes;
  }
  const auto ctas = static_cast<unsigned>((tokens + kTokens - 1) / kTokens);
  fused_kernel<kTokens><<<ctas, kFusedWarps * 32, static_cast<std::size_t>(bytes)>>>(
      X, y, coeffs, next, X_out, next_input, next_coeffs, tokens, hidden);
}

void check_shape(int64_t tokens, int64_t hidden) {
  if (tokens <= 0 || hidden <= 0 || hidden % kStreamVector != 0)
    throw std::invalid_argument("mhc: tokens must be positive and hidden a positive multiple of 8");
}

struct DeviceLimits {
  int sms = 0;
  int64_t fused_tile_bytes = 0;  // dynamic shared memory a single-pass CTA may hold
};

DeviceLimits device_limits() {
  int device = 0, sms = 0, optin = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  cudaFuncAttributes widest{};
  CUDA_CHECK(cudaFuncGetAttributes(&widest, fused_kernel<kMaxFusedTokens>));
  return {sms, static_cast<int64_t>(optin) - static_cast<int64_t>(widest.sharedSizeBytes)};
}

}  // namespace

void launch_mhc_projection(const uint16_t* X, const uint16_t* fn, float* workspace, int splits,
                           int64_t tokens, int64_t hidden) {
  check_shape(tokens, hidden);
  const dim3 grid(static_cast<unsigned>((tokens + kProjectionTokens - 1) / kProjectionTokens),
                  static_cast<unsigned>(splits));
  projection_kernel<<<grid, kProjectionWarps * 32>>>(X, fn, workspace, tokens, hidden);
}

void launch_mhc_pre_mix(const uint16_t* X, const float* workspace, int splits, const MhcScales& scales,
                        float* coeffs, uint16_t* x_in, int64_t tokens, int64_t hidden) {
  check_shape(tokens, hidden);
  pre_mix_kernel<<<static_cast<unsigned>(tokens), kElementThreads>>>(X, workspace, splits, scales, coeffs,
                                                                     x_in, tokens, hidden);
}

void launch_mhc_post_merge(const uint16_t* X, const uint16_t* y, const float* coeffs, uint16_t* X_out,
                           int64_t tokens, int64_t hidden) {
  check_shape(tokens, hidden);
  post_merge_kernel<<<static_cast<unsigned>(tokens), kElementThreads>>>(X, y, coeffs, X_out, hidden);
}

void launch_mhc_fused(const uint16_t* X, const uint16_t* y, const float* coeffs, const MhcSiteDevice& next,
                      uint16_t* X_out, uint16_t* next_input, float* next_coeffs, int tokens_per_cta,
                      int64_t tokens, int64_t hidden) {
  check_shape(tokens, hidden);
  switch (tokens_per_cta) {
    case 1:
      return launch_fused_with<1>(X, y, coeffs, next, X_out, next_input, next_coeffs, tokens, hidden);
    case 2:
      return launch_fused_with<2>(X, y, coeffs, next, X_out, next_input, next_coeffs, tokens, hidden);
    case 4:
      return launch_fused_with<4>(X, y, coeffs, next, X_out, next_input, next_coeffs, tokens, hidden);
    default:
      throw std::invalid_argument("mhc single pass: 1, 2 or 4 tokens a CTA");
  }
}

int mhc_projection_splits_here(int64_t tokens, int64_t hidden) {
  return mhc_projection_splits(tokens, hidden, device_limits().sms);
}

int mhc_fused_tokens_per_cta_here(int64_t tokens, int64_t hidden) {
  const DeviceLimits limits = device_limits();
  const int per_cta = mhc_fused_tokens_per_cta(tokens, hidden, limits.sms, limits.fused_tile_bytes);
  if (per_cta == 0) throw std::invalid_argument("mhc single pass: one token's streams exceed shared memory");
  return per_cta;
}

bool mhc_fused_fits_here(int tokens_per_cta, int64_t hidden) {
  return fused_tile_bytes(tokens_per_cta, hidden) <= device_limits().fused_tile_bytes;
}

MhcStepResult mhc_three_kernel_cuda(const std::vector<uint16_t>& X, const std::vector<uint16_t>& y,
                                    const std::vector<float>& coeffs, const MhcWeights& next, int64_t tokens,
                                    int64_t hidden) {
  const int splits = mhc_projection_splits_here(tokens, hidden);
  const DeviceBuffer<float> workspace(
      static_cast<std::size_t>(mhc_projection_workspace_floats(tokens, splits)));
  return run_mhc_step(X, y, coeffs, next, [&](const MhcStepDevice& d) {
    launch_mhc_post_merge(d.X, d.y, d.coeffs, d.streams, tokens, hidden);
    launch_mhc_projection(d.streams, d.next.fn, workspace.get(), splits, tokens, hidden);
    launch_mhc_pre_mix(d.streams, workspace.get(), splits, d.next.scales, d.next_coeffs, d.next_input, tokens,
                       hidden);
  });
}

MhcStepResult mhc_fused_cuda(const std::vector<uint16_t>& X, const std::vector<uint16_t>& y,
                             const std::vector<float>& coeffs, const MhcWeights& next, int tokens_per_cta,
                             int64_t tokens, int64_t hidden) {
  return run_mhc_step(X, y, coeffs, next, [&](const MhcStepDevice& d) {
    launch_mhc_fused(d.X, d.y, d.coeffs, d.next, d.streams, d.next_input, d.next_coeffs, tokens_per_cta,
                     tokens, hidden);
  });
}

}  // namespace v41sim::kernels
