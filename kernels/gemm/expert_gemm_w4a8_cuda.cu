// Expert GEMM with FP4 weights read as FP4: FP8 E4M3 activations x MXFP4
// weights (E2M1 + an E8M0 scale per 32 along K) on mma.sync.m16n8k32 (FP8
// E4M3 operands, FP32 accumulators; sm_89 and later). Our own kernel, since
// cuBLASLt offers no FP8 x FP4 path on Hopper: the cuBLASLt route widens the
// weights to FP8 in memory first, which doubles the weight bytes a decode
// step streams.
//
// Per CTA: one expert, BM activation rows x 64 weight rows, K in blocks of
// 128 (four scale groups) through a cp.async pipeline of 2-4 stages. The
// weights stay packed in shared memory; each lane widens the four codes of a
// fragment register to E4M3 in registers (exact: E2M1 values are E4M3
// values). One m16n8k32 step spans exactly one scale group, so each step's
// partial product is scaled by its columns' group scales and added to the
// FP32 accumulators (the promotion DeepGEMM does per 128 on Hopper): exact
// for any scales, where a single FP8 tensor scale is exact only while the
// group scales of a matrix lie within 2^8 of each other.
#include <cuda_runtime.h>

#include <stdexcept>
#include <vector>

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/mma_fragments_e4m3.h"
#include "kernels/common/mma_sync.cuh"
#include "kernels/gemm/expert_gemm.h"
#include "kernels/gemm/expert_gemm_mma_pipeline.cuh"
#include "kernels/gemm/expert_gemm_w4a8_tiling.h"

namespace v41sim::kernels {
namespace {

using namespace w4a8;

// One stage's four k32 steps for a warp's tiles_m x tiles_n mma tiles, each
// step's partial sums promoted into acc with their columns' group scales.
struct ComputeStage {
  template <class T>
  __device__ static void run(const expert_mma::Stage& in, int warp, mma::Lane l,
                             expert_mma::Accumulators<T>& acc) {
#pragma unroll
    for (int group = 0; group < kGroupsPerBlock; ++group) {
      const int k0 = group * mma::e4m3::kK;
      uint32_t a[T::tiles_m][4];
#pragma unroll
      for (int mt = 0; mt < T::tiles_m; ++mt) {
#pragma unroll
        for (int r = 0; r < 4; ++r)
          a[mt][r] = mma::e4m3::load_a(in.activations, T::a_stride, tile_row<T>(warp, mt), k0, l, r);
      }
#pragma unroll
      for (int nt = 0; nt < T::tiles_n; ++nt) {
        const int n0 = tile_col<T>(warp, nt);
        const uint32_t b[2] = {mma::e4m3::load_b_e2m1(in.weights, T::w_stride, n0, k0, l, 0),
                               mma::e4m3::load_b_e2m1(in.weights, T::w_stride, n0, k0, l, 1)};
        const float scale_even = mma::e4m3::c_scale(in.scales, kGroupsPerBlock, n0, group, l, 0);
        const float scale_odd = mma::e4m3::c_scale(in.scales, kGroupsPerBlock, n0, group, l, 1);
#pragma unroll
        for (int mt = 0; mt < T::tiles_m; ++mt) {
          float partial[4] = {0.0f, 0.0f, 0.0f, 0.0f};
          mma::mma_e4m3_16832(partial, a[mt], b);
          acc[mt][nt][0] += partial[0] * scale_even;  // c_col(l, 0) and c_col(l, 2) are even columns
          acc[mt][nt][1] += partial[1] * scale_odd;
          acc[mt][nt][2] += partial[2] * scale_even;
          acc[mt][nt][3] += partial[3] * scale_odd;
        }
      }
    }
  }
};

template <class T>
__global__ void __launch_bounds__(T::threads, T::min_blocks_per_sm)
    expert_gemm_w4a8_kernel(ExpertGemmW4A8 g) {
  expert_mma::expert_gemm_cta<T, ComputeStage>(g, g.activation_scale);
}

template <class T>
void launch(const ExpertGemmW4A8& g) {
  expert_gemm_w4a8_kernel<T><<<expert_mma::grid_of<T>(g), T::threads>>>(g);
}

}  // namespace

void run_expert_gemm_w4a8(const ExpertGemmW4A8& g) {
  expert_mma::check_launch_shape(g, "expert gemm w4a8");
  switch (block_rows(g.m)) {
    case Rows16::block_m:
      launch<Rows16>(g);
      break;
    case Rows64::block_m:
      launch<Rows64>(g);
      break;
    default:
      launch<Rows128>(g);
  }
  CUDA_CHECK(cudaGetLastError());
}

std::vector<float> expert_gemm_w4a8_cuda(const std::vector<uint8_t>& a, float a_scale, int64_t m,
                                         const std::vector<ExpertWeights>& experts, W4a8Kernel kernel) {
  const expert_mma::PackedExperts e = expert_mma::pack_experts(experts, a.size(), m, "expert gemm w4a8");
  const DeviceBuffer<uint8_t> d_a(a), d_packed(e.packed), d_scales(e.scales);
  const DeviceBuffer<float> d_out(static_cast<std::size_t>(e.count * m * e.n));
  const ExpertGemmW4A8 gemm{d_a.get(), d_packed.get(), d_scales.get(), d_out.get(), a_scale, e.count, m, e.n,
                            e.k};
  if (kernel == W4a8Kernel::kMmaSync) {
    run_expert_gemm_w4a8(gemm);
  } else {
    run_expert_gemm_w4a8_wgmma(
        gemm, kernel == W4a8Kernel::kWgmma ? WgmmaSchedule::kLockstep : WgmmaSchedule::kWarpSpecialized);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  return d_out.download(static_cast<std::size_t>(e.count * m * e.n));
}

}  // namespace v41sim::kernels
