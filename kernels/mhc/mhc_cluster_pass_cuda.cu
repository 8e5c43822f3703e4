// The mHC single pass by clusters (sm_90 and later): block i's merge, block
// i+1's projection and its input in one persistent kernel, the hidden
// dimension split over a cluster of 8 or 16 CTAs (mhc_cluster_slices.h says why).
//
// Per tile of up to 8 tokens, each CTA (16 or 8 warps):
//   (1) merges its slice of the tokens' streams (all four, its H/8 or H/16
//       values of each) with the block output: to HBM, and into its shared tile;
//   (2) projects the tile against its slice of fn, resident in shared memory
//       since the launch (tensor cores; the warps split the slice's steps);
//   (3) adds its warps' sums and posts them in shared memory; after a cluster
//       barrier every CTA adds the cluster's sums in rank order over distributed
//       shared memory and finishes the coefficients (the same in every CTA);
//   (4) makes its slice of block i+1's input from the tile.
// The posted sums are double-buffered by tile, so one barrier a tile suffices:
// a CTA writes a buffer again only two tiles later, past a barrier every CTA
// reaches after reading it. A last barrier keeps each CTA's shared memory
// alive until the cluster is done with it.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>

#include "kernels/common/cp_async.cuh"
#include "kernels/common/cuda_check.h"
#include "kernels/common/dynamic_shared_memory.cuh"
#include "kernels/mhc/mhc_cluster_slices.h"
#include "kernels/mhc/mhc_device_steps.cuh"
#include "kernels/mhc/mhc_mixing.h"
#include "kernels/mhc/mhc_step_run.h"

namespace v41sim::kernels {
namespace {

namespace cg = cooperative_groups;
using namespace mhc_steps;  // NOLINT: the shared device steps

struct ClusterPassArgs {
  const uint16_t* X;
  const uint16_t* y;
  const float* coeffs;
  MhcSiteDevice next;
  uint16_t* X_out;
  uint16_t* next_input;
  float* next_coeffs;
  int64_t tokens;
  int64_t hidden;
  int tile_rows;
};

// This CTA's share of a site: its rank, its vectors of each stream, its slices' row stride.
struct Slice {
  int rank;
  int64_t first_vector;  // of each stream
  int64_t vectors;       // of each stream
  int64_t columns;       // 4 x vectors x 8
  int64_t stride;        // values between slice rows
};

// fn's columns of this slice, row by row, into shared memory (once a
// launch), 16 bytes a copy, asynchronously: the first tile's merge streams
// while they land (they are waited for before its projection).
__device__ void start_fn_slice(const uint16_t* fn, int64_t hidden, int ctas, const Slice& slice,
                               uint4* fn_s) {
  const int64_t copies = fn_slice_copies(hidden, ctas, slice.rank);
  for (int64_t i = threadIdx.x; i < copies; i += blockDim.x) {
    const FnSliceCopy copy = fn_slice_copy(hidden, ctas, slice.rank, i);
    cp_async_16(fn_s + copy.shared_value / kStreamVector, fn + copy.fn_value, true);
  }
  cp_async_commit();
}

// (1) Block i's merge of the tile's tokens, this slice of them.
__device__ void merge_slice(const ClusterPassArgs& a, const Slice& slice, int64_t token0, int rows,
                            const float (&c)[kClusterMaxTileRows][kCoefficients], uint4* tile_s) {
  const int64_t vectors = a.hidden / kStreamVector;
  for (int64_t i = threadIdx.x; i < rows * slice.vectors; i += blockDim.x) {
    const int r = static_cast<int>(i / slice.vectors);
    const int64_t v = i % slice.vectors, at = slice.first_vector + v;
    const TokenCoefficients token = coefficients_of(c[r]);
    const uint4* streams = reinterpret_cast<const uint4*>(a.X + (token0 + r) * kStreams * a.hidden);
    const uint4* output = reinterpret_cast<const uint4*>(a.y + (token0 + r) * a.hidden);
    uint4* out = reinterpret_cast<uint4*>(a.X_out + (token0 + r) * kStreams * a.hidden);
    uint4* kept = tile_s + tile_row_vector(slice.stride, r);
    uint4 merged[kStreams];
    merge_at(token.values, streams, vectors, output, at, merged);
#pragma unroll
    for (int d = 0; d < kStreams; ++d) {
      out[stream_vector(vectors, d, at)] = merged[d];
      kept[stream_vector(slice.vectors, d, v)] = merged[d];
    }
  }
}

// (4) This slice of block i+1's input, from the tile.
__device__ void input_slice(const ClusterPassArgs& a, const Slice& slice, int64_t token0, int rows,
                            const float (&c)[kClusterMaxTileRows][kCoefficients], const uint4* tile_s) {
  for (int64_t i = threadIdx.x; i < rows * slice.vectors; i += blockDim.x) {
    const int r = static_cast<int>(i / slice.vectors);
    const int64_t v = i % slice.vectors;
    const TokenCoefficients token = coefficients_of(c[r]);
    const uint4* kept = tile_s + tile_row_vector(slice.stride, r);
    reinterpret_cast<uint4*>(a.next_input + (token0 + r) * a.hidden)[slice.first_vector + v] =
        block_input_at(token.values, kept, slice.vectors, v);
  }
}

template <int kCtas>
constexpr int kWarpsOf = cluster_warps(kCtas);

template <int kCtas>
__global__ void __launch_bounds__(kWarpsOf<kCtas> * 32, cluster_ctas_an_sm(kCtas))
    cluster_pass_kernel(ClusterPassArgs a) {
  constexpr int kWarps = kWarpsOf<kCtas>;
  constexpr int kThreads = kWarps * 32;
  extern __shared__ uint4 shared_vectors[];
  __shared__ float c[kClusterMaxTileRows][kCoefficients];
  __shared__ float partial[kWarps][kClusterMaxTileRows][kProjectionSums];
  __shared__ float posted[2][kClusterMaxTileRows][kProjectionSums];  // this CTA's sums, read by the cluster
  __shared__ float sums[kClusterMaxTileRows][kProjectionSums];       // the cluster's
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const VectorRange owned = cluster_vectors(a.hidden, kCtas, rank);
  const Slice slice{rank, owned.begin, owned.end - owned.begin, cluster_slice_columns(a.hidden, kCtas, rank),
                    cluster_slice_stride(a.hidden, kCtas)};
  uint4* fn_s = shared_vectors;
  uint4* tile_s = shared_vectors + tile_row_vector(slice.stride, kMixes);  // past fn's kMixes rows
  const auto* fn_values = reinterpret_cast<const uint16_t*>(fn_s);
  const auto* tile_values = reinterpret_cast<const uint16_t*>(tile_s);
  const int thread = static_cast<int>(threadIdx.x);
  const int warp = thread / 32;
  const mma::Lane l = mma::lane_of(thread % 32);
  const StepRange steps = step_range(slice.columns / mma::kK, warp, kWarps);
  start_fn_slice(a.next.fn, a.hidden, kCtas, slice, fn_s);

  const int64_t tiles = (a.tokens + a.tile_rows - 1) / a.tile_rows;
  const int64_t clusters = gridDim.x / kCtas;
  int buffer = 0;
  for (int64_t tile = blockIdx.x / kCtas; tile < tiles; tile += clusters, buffer ^= 1) {
    const auto [token0, rows] = tile_span(a.tokens, a.tile_rows, tile);
    __syncthreads();  // the previous tile's input is done with c and the tile
    for (int i = thread; i < rows * kCoefficients; i += kThreads)
      c[i / kCoefficients][i % kCoefficients] = a.coeffs[token0 * kCoefficients + i];
    __syncthreads();
    merge_slice(a, slice, token0, rows, c, tile_s);
    cp_async_wait<0>();  // fn's slice has landed (at once after the first tile)
    __syncthreads();

    // (2) The projection of the slice.
    float acc[1][kMixTiles][4] = {};
    float squares[1][2] = {};
    project_steps<1>(tile_values, slice.stride, rows, fn_values, slice.stride, steps, l, acc, squares);
    store_sums<1, kClusterMaxTileRows>(partial[warp], acc, squares, l, rows);
    __syncthreads();

    // (3) The cluster's sums, in rank order, and the coefficients.
    for (int i = thread; i < rows * kProjectionSums; i += kThreads)
      posted[buffer][i / kProjectionSums][i % kProjectionSums] = sum_over_warps(partial, i);
    cluster.sync();
    for (int i = thread; i < rows * kProjectionSums; i += kThreads) {
      float sum = 0.0f;
      for (int from = 0; from < kCtas; ++from) sum += cluster.map_shared_rank(&posted[buffer][0][0], from)[i];
      sums[i / kProjectionSums][i % kProjectionSums] = sum;
    }
    __syncthreads();
    finish_coefficients(sums, rows, static_cast<float>(kStreams * a.hidden), a.next.scales, c);
    __syncthreads();
    if (rank == 0) {
      for (int i = thread; i < rows * kCoefficients; i += kThreads)
        a.next_coeffs[token0 * kCoefficients + i] = c[i / kCoefficients][i % kCoefficients];
    }
    input_slice(a, slice, token0, rows, c, tile_s);
  }
  cluster.sync();  // no CTA leaves while another may still read its posted sums
}

void check_cluster_shape(int64_t tokens, int64_t hidden, int tile_rows) {
  if (tokens <= 0 || hidden <= 0 || hidden % kStreamVector != 0)
    throw std::invalid_argument(
        "mhc cluster pass: tokens must be positive and hidden a positive multiple of 8");
  if (tile_rows < 1 || tile_rows > kClusterMaxTileRows)
    throw std::invalid_argument("mhc cluster pass: 1 to 8 token rows a tile");
}

// The kernel for a cluster size, as the host API takes it.
using ClusterKernel = void (*)(ClusterPassArgs);
ClusterKernel kernel_for(int ctas) {
  switch (ctas) {
    case 8:
      return cluster_pass_kernel<8>;
    case 16:
      return cluster_pass_kernel<16>;
    default:
      throw std::invalid_argument("mhc cluster pass: 8 or 16 CTAs a cluster");
  }
}

// The launch, `clusters` clusters of `ctas` CTAs.
cudaLaunchConfig_t cluster_config(int ctas, int clusters, int64_t hidden, cudaLaunchAttribute* attribute) {
  attribute->id = cudaLaunchAttributeClusterDimension;
  attribute->val.clusterDim.x = static_cast<unsigned>(ctas);
  attribute->val.clusterDim.y = 1;
  attribute->val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(clusters * ctas));
  config.blockDim = dim3(static_cast<unsigned>(cluster_warps(ctas) * 32));
  config.dynamicSmemBytes = static_cast<std::size_t>(cluster_pass_shared_bytes(hidden, ctas));
  config.attrs = attribute;
  config.numAttrs = 1;
  return config;
}

// Lets the kernel hold `hidden`'s slices (and a 16-CTA cluster, beyond the
// portable size); false where shared memory is too small.
bool allow_cluster(int ctas, int64_t hidden) {
  const ClusterKernel kernel = kernel_for(ctas);
  const int64_t bytes = cluster_pass_shared_bytes(hidden, ctas);
  if (bytes > dynamic_shared_memory_limit(kernel)) return false;
  CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  if (ctas > 8 &&
      cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
    (void)cudaGetLastError();  // a device without non-portable clusters: this size does not run here
    return false;
  }
  return true;
}

}  // namespace

MhcClusterPlan mhc_cluster_plan_here(int ctas, int64_t tokens, int64_t hidden) {
  check_cluster_shape(tokens, hidden, 1);
  if (!allow_cluster(ctas, hidden)) return {};
  cudaLaunchAttribute attribute{};
  const cudaLaunchConfig_t config = cluster_config(ctas, 1, hidden, &attribute);
  int resident = 0;
  if (cudaOccupancyMaxActiveClusters(&resident, reinterpret_cast<const void*>(kernel_for(ctas)), &config) !=
      cudaSuccess) {
    (void)cudaGetLastError();  // a cluster size this device cannot schedule: not an error of the run
    return {};
  }
  if (resident <= 0) return {};
  const int tile_rows = mhc_cluster_tile_rows(tokens, resident);
  const int64_t tiles = (tokens + tile_rows - 1) / tile_rows;
  return {ctas, static_cast<int>(std::min<int64_t>(resident, tiles)), tile_rows};
}

void launch_mhc_cluster_pass(const uint16_t* X, const uint16_t* y, const float* coeffs,
                             const MhcSiteDevice& next, uint16_t* X_out, uint16_t* next_input,
                             float* next_coeffs, const MhcClusterPlan& plan, int64_t tokens, int64_t hidden) {
  check_cluster_shape(tokens, hidden, plan.tile_rows);
  if (plan.clusters <= 0) throw std::invalid_argument("mhc cluster pass: no cluster fits this device");
  cudaLaunchAttribute attribute{};
  const cudaLaunchConfig_t config = cluster_config(plan.ctas, plan.clusters, hidden, &attribute);
  const ClusterPassArgs args{X,          y,           coeffs, next,   X_out,
                             next_input, next_coeffs, tokens, hidden, plan.tile_rows};
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel_for(plan.ctas), args));
}

MhcStepResult mhc_cluster_pass_cuda(const std::vector<uint16_t>& X, const std::vector<uint16_t>& y,
                                    const std::vector<float>& coeffs, const MhcWeights& next, int ctas,
                                    int tile_rows, int64_t tokens, int64_t hidden) {
  MhcClusterPlan plan = mhc_cluster_plan_here(ctas, tokens, hidden);
  if (plan.clusters <= 0) throw std::invalid_argument("mhc cluster pass: no cluster fits this device");
  if (tile_rows > 0) {
    plan.tile_rows = tile_rows;
    plan.clusters = static_cast<int>(std::min<int64_t>(plan.clusters, (tokens + tile_rows - 1) / tile_rows));
  }
  return run_mhc_step(X, y, coeffs, next, [&](const MhcStepDevice& d) {
    launch_mhc_cluster_pass(d.X, d.y, d.coeffs, d.next, d.streams, d.next_input, d.next_coeffs, plan, tokens,
                            hidden);
  });
}

}  // namespace v41sim::kernels
