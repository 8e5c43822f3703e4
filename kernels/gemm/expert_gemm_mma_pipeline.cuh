// The CTA both mma.sync expert GEMMs run (W4A8: expert_gemm_w4a8_cuda.cu;
// W4A16: expert_gemm_w4a16_cuda.cu): one expert, block_m activation rows x 64
// weight rows, K in blocks of 128 through a cp.async pipeline of T::stages,
// the weights packed FP4 in shared memory. The kernels differ only in how a
// stage's fragments are loaded, widened and multiplied (ComputeStage) and in
// the scale the output takes; the copies are the tiling's
// (expert_gemm_w4a8_tiling.h, activations of T::activation_bytes a value).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/cp_async.cuh"
#include "kernels/common/mma_fragments.h"
#include "kernels/gemm/expert_gemm.h"
#include "kernels/gemm/expert_gemm_w4a8_tiling.h"

namespace v41sim::kernels::expert_mma {

using w4a8::Copy;
using w4a8::CtaOrigin;
using w4a8::kBlockK;
using w4a8::kBlockN;
using w4a8::Problem;

// A stage's three arrays as ComputeStage reads them (the tiling's layout:
// activations, packed weights, the weight rows' scale codes).
struct Stage {
  const uint8_t* activations;
  const uint8_t* weights;
  const uint8_t* scales;
};
template <class T>
__device__ Stage stage_at(const uint8_t* base) {
  return {base, base + T::a_bytes, base + T::a_bytes + T::w_bytes};
}

// A warp's FP32 accumulators: four a lane for each of its mma tiles.
template <class T>
using Accumulators = float[T::tiles_m][T::tiles_n][4];

// Issues the copies of k-block kb into one stage. Gemm: the launch's
// parameters (activations, packed_weights, weight_scales).
template <class T, class Gemm>
__device__ void load_stage(const Gemm& g, const Problem& p, const CtaOrigin& o, int64_t kb, uint8_t* stage) {
  const auto* activations = reinterpret_cast<const uint8_t*>(g.activations);
  for (int c = static_cast<int>(threadIdx.x); c < T::a_chunks; c += T::threads) {
    const Copy copy = w4a8::activation_copy<T>(c, p, o, kb);
    cp_async_16(stage + copy.smem, activations + copy.global, copy.valid);
  }
  for (int c = static_cast<int>(threadIdx.x); c < T::w_chunks; c += T::threads) {
    const Copy copy = w4a8::weight_copy<T>(c, p, o, kb);
    cp_async_16(stage + copy.smem, g.packed_weights + copy.global, true);
  }
  for (int c = static_cast<int>(threadIdx.x); c < T::s_chunks; c += T::threads) {
    const Copy copy = w4a8::scale_copy<T>(c, p, o, kb);
    cp_async_4(stage + copy.smem, g.weight_scales + copy.global);
  }
}

// The CTA (blockIdx: m-tile, weight-row tile, expert): the pipeline, then
// each accumulator times output_scale to the output.
// ComputeStage::run<T>(Stage, warp, lane, acc) multiplies one k-block.
template <class T, class ComputeStage, class Gemm>
__device__ void expert_gemm_cta(const Gemm& g, float output_scale) {
  __shared__ __align__(16) uint8_t smem[T::stages * T::stage_bytes];
  const Problem p{g.experts, g.m, g.n, g.k};
  // m-tiles fastest: neighbouring CTAs read the same weights, from L2.
  const CtaOrigin o{blockIdx.z, static_cast<int64_t>(blockIdx.x) * T::block_m,
                    static_cast<int64_t>(blockIdx.y) * kBlockN};
  const int64_t blocks = g.k / kBlockK;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const mma::Lane l = mma::lane_of(static_cast<int>(threadIdx.x) % 32);

  // Prologue: stages - 1 blocks in flight. Every iteration commits one group
  // (empty past the end), so "at most stages - 2 pending" always means the
  // block about to be used has landed.
#pragma unroll
  for (int s = 0; s < T::stages - 1; ++s) {
    if (s < blocks) load_stage<T>(g, p, o, s, smem + s * T::stage_bytes);
    cp_async_commit();
  }
  Accumulators<T> acc = {};
  for (int64_t kb = 0; kb < blocks; ++kb) {
    cp_async_wait<T::stages - 2>();
    __syncthreads();  // block kb visible to all; block kb - 1's stage free to overwrite
    const int64_t next = kb + T::stages - 1;
    if (next < blocks) load_stage<T>(g, p, o, next, smem + (next % T::stages) * T::stage_bytes);
    cp_async_commit();
    ComputeStage::template run<T>(stage_at<T>(smem + (kb % T::stages) * T::stage_bytes), warp, l, acc);
  }

  float* d = g.out + o.expert * g.m * g.n;
#pragma unroll
  for (int mt = 0; mt < T::tiles_m; ++mt) {
#pragma unroll
    for (int nt = 0; nt < T::tiles_n; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int64_t row = o.row0 + w4a8::tile_row<T>(warp, mt) + mma::c_row(l, i);
        const int64_t col = o.n0 + w4a8::tile_col<T>(warp, nt) + mma::c_col(l, i);
        if (row < g.m) d[row * g.n + col] = acc[mt][nt][i] * output_scale;
      }
    }
  }
}

// The launch's grid for tiling T.
template <class T, class Gemm>
dim3 grid_of(const Gemm& g) {
  return dim3(static_cast<unsigned>((g.m + T::block_m - 1) / T::block_m),
              static_cast<unsigned>(g.n / kBlockN), static_cast<unsigned>(g.experts));
}

// The shapes a launch takes; refused otherwise, naming the kernel.
template <class Gemm>
void check_launch_shape(const Gemm& g, const std::string& kernel) {
  if (g.experts <= 0 || g.experts > 65535 || g.m <= 0 || g.n <= 0 || g.n % kBlockN != 0 || g.k <= 0 ||
      g.k % kBlockK != 0 || g.n / kBlockN > 65535) {
    throw std::invalid_argument(kernel + ": needs 1-65535 experts, m > 0, n a multiple of 64, k of 128");
  }
}

// A launch's experts from host vectors: their packed codes and scales laid
// end to end as the kernels read them, after checking that they share one
// shape and that the activations hold experts x m x k values.
struct PackedExperts {
  int64_t count = 0, n = 0, k = 0;
  std::vector<uint8_t> packed, scales;
};
inline PackedExperts pack_experts(const std::vector<ExpertWeights>& experts, std::size_t activations,
                                  int64_t m, const std::string& kernel) {
  if (experts.empty()) throw std::invalid_argument(kernel + ": no experts");
  PackedExperts out{static_cast<int64_t>(experts.size()), experts.front().n, experts.front().k, {}, {}};
  if (static_cast<int64_t>(activations) != out.count * m * out.k)
    throw std::invalid_argument(kernel + ": activations are experts x m x k");
  for (const ExpertWeights& w : experts) {
    if (w.n != out.n || w.k != out.k)
      throw std::invalid_argument(kernel + ": a group's experts share one shape");
    out.packed.insert(out.packed.end(), w.packed.begin(), w.packed.end());
    out.scales.insert(out.scales.end(), w.scales.begin(), w.scales.end());
  }
  return out;
}

}  // namespace v41sim::kernels::expert_mma
