// Expert GEMM as W4A16: BF16 activations x MXFP4 weights (E2M1 + an E8M0
// scale per 32 along K) on mma.sync.m16n8k16 (BF16 operands, FP32
// accumulators), the way Marlin's MoE kernels run V4's FP4 experts on Hopper
// (its FP8 tensor cores idle). Our own kernel, so the harness times the W4A16
// engine choice the step model offers beside the W4A8 one it assumes.
//
// Per CTA: one expert, 16 or 64 activation rows x 64 weight rows, K in blocks
// of 128 (four scale groups) through a cp.async pipeline, the W4A8 kernel's
// CTA (expert_gemm_mma_pipeline.cuh).
// The weights stay packed in shared memory; each lane widens the four codes
// of its B fragment to BF16 in registers, multiplying in their group's scale
// (expert_gemm_w4a16_tiling.h), so the accumulators need no promotion.
#include <cuda_runtime.h>

#include <stdexcept>
#include <vector>

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/mma_sync.cuh"
#include "kernels/gemm/expert_gemm.h"
#include "kernels/gemm/expert_gemm_mma_pipeline.cuh"
#include "kernels/gemm/expert_gemm_w4a16_tiling.h"

namespace v41sim::kernels {
namespace {

using namespace w4a16;

// One stage's eight k16 steps for a warp's tiles_m x tiles_n mma tiles.
struct ComputeStage {
  template <class T>
  __device__ static void run(const expert_mma::Stage& in, int warp, mma::Lane l,
                             expert_mma::Accumulators<T>& acc) {
#pragma unroll
    for (int step = 0; step < kStepsPerBlock; ++step) {
      const int k0 = step * mma::kK;
      uint32_t a[T::tiles_m][4];
#pragma unroll
      for (int mt = 0; mt < T::tiles_m; ++mt)
        load_a(in.activations, T::a_stride, tile_row<T>(warp, mt), k0, l, a[mt]);
#pragma unroll
      for (int nt = 0; nt < T::tiles_n; ++nt) {
        uint32_t b[2];
        load_b(in.weights, T::w_stride, in.scales, tile_col<T>(warp, nt), k0, l, b);
#pragma unroll
        for (int mt = 0; mt < T::tiles_m; ++mt) mma::mma_bf16_16816(acc[mt][nt], a[mt], b);
      }
    }
  }
};

template <class T>
__global__ void __launch_bounds__(T::threads, T::min_blocks_per_sm)
    expert_gemm_w4a16_kernel(ExpertGemmW4A16 g) {
  expert_mma::expert_gemm_cta<T, ComputeStage>(g, 1.0f);
}

template <class T>
void launch(const ExpertGemmW4A16& g) {
  expert_gemm_w4a16_kernel<T><<<expert_mma::grid_of<T>(g), T::threads>>>(g);
}

}  // namespace

void run_expert_gemm_w4a16(const ExpertGemmW4A16& g) {
  expert_mma::check_launch_shape(g, "expert gemm w4a16");
  if (block_rows(g.m) == Rows16::block_m) {
    launch<Rows16>(g);
  } else {
    launch<Rows64>(g);
  }
  CUDA_CHECK(cudaGetLastError());
}

std::vector<float> expert_gemm_w4a16_cuda(const std::vector<uint16_t>& a, int64_t m,
                                          const std::vector<ExpertWeights>& experts) {
  const expert_mma::PackedExperts e = expert_mma::pack_experts(experts, a.size(), m, "expert gemm w4a16");
  const DeviceBuffer<uint16_t> d_a(a);
  const DeviceBuffer<uint8_t> d_packed(e.packed), d_scales(e.scales);
  const DeviceBuffer<float> d_out(static_cast<std::size_t>(e.count * m * e.n));
  run_expert_gemm_w4a16({d_a.get(), d_packed.get(), d_scales.get(), d_out.get(), e.count, m, e.n, e.k});
  CUDA_CHECK(cudaDeviceSynchronize());
  return d_out.download(static_cast<std::size_t>(e.count * m * e.n));
}

}  // namespace v41sim::kernels
