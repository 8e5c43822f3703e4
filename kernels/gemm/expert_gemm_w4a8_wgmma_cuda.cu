// Expert GEMM with FP4 weights read as FP4, on Hopper's warpgroup MMA: FP8
// E4M3 activations x MXFP4 weights, wgmma m64n128k32 (sm_90a), for the
// prefill shapes where the mma.sync kernel (expert_gemm_w4a8_cuda.cu) leaves
// most of the tensor rate unused and the cuBLASLt route pays a widening pass
// through memory first.
//
// Per CTA: one expert, 128 activation rows (two warpgroups of 64) x 128
// weight rows, K in blocks of 128 through a 4-stage cp.async pipeline of
// activations (written straight into the 128-byte swizzle wgmma reads),
// packed weights and their scale codes. Each block's FP4 weights are widened
// to FP8 in shared memory, with their group scales folded in
// (expert_gemm_w4a8_wgmma_tiling.h), while the tensor cores run the block
// before: the wgmma steps are asynchronous, so the CTA issues block kb's four
// k32 steps, widens block kb + 1 into the other weight tile, then waits and
// promotes block kb's partial sums into the FP32 accumulators with each
// weight row's block scale. One CTA an SM (134 KB of shared memory).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/common/cp_async.cuh"
#include "kernels/common/cuda_check.h"
#include "kernels/common/wgmma.cuh"
#include "kernels/gemm/expert_gemm.h"
#include "kernels/gemm/expert_gemm_w4a8_wgmma_tiling.h"

namespace v41sim::kernels {
namespace {

using namespace w4a8;
using namespace w4a8::wgmma_tiles;

__device__ void load_stage(const ExpertGemmW4A8& g, const Problem& p, const CtaOrigin& o, int64_t kb,
                           uint8_t* stage) {
  for (int c = static_cast<int>(threadIdx.x); c < kActivationChunks; c += kThreads) {
    const Copy copy = activation_copy(c, p, o, kb);
    cp_async_16(stage + copy.smem, g.activations + copy.global, copy.valid);
  }
  for (int c = static_cast<int>(threadIdx.x); c < kWeightChunks; c += kThreads) {
    const Copy copy = weight_copy(c, p, o, kb);
    cp_async_16(stage + copy.smem, g.packed_weights + copy.global, true);
  }
  for (int r = static_cast<int>(threadIdx.x); r < kTileN; r += kThreads) {
    const Copy copy = scale_copy(r, p, o, kb);
    cp_async_4(stage + copy.smem, g.weight_scales + copy.global);
  }
}

// A stage's weights into a widened tile and its rows' promotion scales. Each
// thread then fences its shared-memory writes for the tensor cores (the
// async proxy): the widened tile's stores, and the activations its cp.async
// copies landed before its last wait; a barrier follows before any wgmma.
__device__ void widen_stage(const uint8_t* stage, const E2m1ToE4m3Table* tables, uint8_t* tile,
                            float* row_scales) {
  for (int q = static_cast<int>(threadIdx.x); q < kWidenedChunks; q += kThreads) {
    const WidenedChunk chunk = widen_chunk(stage, q, tables);
    *reinterpret_cast<uint4*>(tile + chunk.tile_offset) =
        make_uint4(chunk.words[0], chunk.words[1], chunk.words[2], chunk.words[3]);
  }
  for (int r = static_cast<int>(threadIdx.x); r < kTileN; r += kThreads) row_scales[r] = row_scale(stage, r);
  wgmma::fence_shared_for_async_proxy();
}

__global__ void __launch_bounds__(kThreads, 1) expert_gemm_w4a8_wgmma_kernel(ExpertGemmW4A8 g) {
  extern __shared__ uint8_t dynamic_smem[];
  // The swizzle is read off address bits: stages and tiles start 1,024-aligned.
  uint8_t* smem = dynamic_smem + ((wgmma::kAtomBytes - shared_address(dynamic_smem) % wgmma::kAtomBytes) %
                                  wgmma::kAtomBytes);
  auto* tables = reinterpret_cast<E2m1ToE4m3Table*>(smem + kTablesOffset);
  auto* row_scales = reinterpret_cast<float*>(smem + kRowScalesOffset);
  const Problem p{g.experts, g.m, g.n, g.k};
  // m-tiles fastest: neighbouring CTAs read the same weights, from L2.
  const CtaOrigin o{blockIdx.z, static_cast<int64_t>(blockIdx.x) * kTileM,
                    static_cast<int64_t>(blockIdx.y) * kTileN};
  const int64_t blocks = g.k / kBlockK;
  const int warpgroup = static_cast<int>(threadIdx.x) / wgmma::kThreads;
  const int t = static_cast<int>(threadIdx.x) % wgmma::kThreads;
  if (threadIdx.x < kFoldingTables) tables[threadIdx.x] = e2m1_to_e4m3_table(static_cast<int>(threadIdx.x));

    // Prologue: stages - 1 blocks in flight; every iteration commits one group
    // (empty past the end), so "at most stages - 2 pending" means the next
    // block has landed.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < blocks) load_stage(g, p, o, s, smem + s * kStageBytes);
    cp_async_commit();
  }
  cp_async_wait<kStages - 2>();
  __syncthreads();  // block 0 and the tables visible
  widen_stage(smem, tables, smem + kWeightTilesOffset, row_scales);
  __syncthreads();

  float acc[64] = {};
  float partial[64];
  for (int64_t kb = 0; kb < blocks; ++kb) {
    // The stage block kb - 1 used is free: its wgmma steps were waited for
    // and its weights widened before the last barrier.
    const int64_t next = kb + kStages - 1;
    if (next < blocks) load_stage(g, p, o, next, smem + (next % kStages) * kStageBytes);
    cp_async_commit();

    const uint8_t* activations =
        smem + (kb % kStages) * kStageBytes + warpgroup * wgmma::kM * wgmma::kRowBytes;
    const uint8_t* weights = smem + kWeightTilesOffset + (kb % 2) * kWeightTileBytes;
    wgmma::fence();
#pragma unroll
    for (int step = 0; step < kStepsPerBlock; ++step) {
      wgmma::mma_m64n128k32_e4m3(partial, wgmma::descriptor(shared_address(activations + step * wgmma::kK)),
                                 wgmma::descriptor(shared_address(weights + step * wgmma::kK)), step > 0);
    }
    wgmma::commit_group();

    if (kb + 1 < blocks) {  // widen the next block under this one's tensor-core steps
      cp_async_wait<kStages - 2>();
      __syncthreads();
      widen_stage(smem + ((kb + 1) % kStages) * kStageBytes, tables,
                  smem + kWeightTilesOffset + ((kb + 1) % 2) * kWeightTileBytes,
                  row_scales + ((kb + 1) % 2) * kTileN);
    }
    wgmma::wait_group<0>();
    const float* scales = row_scales + (kb % 2) * kTileN;
#pragma unroll
    for (int i = 0; i < 64; i += 2) {  // columns i and i + 1 are adjacent weight rows
      const float2 s = *reinterpret_cast<const float2*>(scales + wgmma::accumulator_col(t, i));
      acc[i] += partial[i] * s.x;
      acc[i + 1] += partial[i + 1] * s.y;
    }
    __syncthreads();
  }

  float* d = g.out + o.expert * g.m * g.n;
#pragma unroll
  for (int i = 0; i < 64; i += 2) {
    const int64_t row = o.row0 + warpgroup * wgmma::kM + wgmma::accumulator_row(t, i);
    const int64_t col = o.n0 + wgmma::accumulator_col(t, i);
    if (row < g.m)
      *reinterpret_cast<float2*>(d + row * g.n + col) =
          make_float2(acc[i] * g.activation_scale, acc[i + 1] * g.activation_scale);
  }
}

}  // namespace

bool expert_gemm_w4a8_wgmma_supported(std::string* why) {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = "no CUDA device";
    return false;
  }
  if (major != 9 || minor != 0) {
    if (why)
      *why = "its wgmma code is built for sm_90a (Hopper); this device is sm_" + std::to_string(major) +
             std::to_string(minor);
    return false;
  }
  return true;
}

void run_expert_gemm_w4a8_wgmma(const ExpertGemmW4A8& g) {
  if (g.experts <= 0 || g.experts > 65535 || g.m <= 0 || g.n <= 0 || g.n % kTileN != 0 || g.k <= 0 ||
      g.k % kBlockK != 0 || g.n / kTileN > 65535 || (g.m + kTileM - 1) / kTileM > 2147483647) {
    throw std::invalid_argument(
        "expert gemm w4a8 (wgmma): needs 1-65535 experts, m > 0, n a multiple of 128, k of 128");
  }
  std::string why;
  if (!expert_gemm_w4a8_wgmma_supported(&why)) throw std::runtime_error("expert gemm w4a8 (wgmma): " + why);
  static const bool shared_memory_raised = [] {
    CUDA_CHECK(cudaFuncSetAttribute(expert_gemm_w4a8_wgmma_kernel,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytesAllocated));
    return true;
  }();
  (void)shared_memory_raised;
  const dim3 grid(static_cast<unsigned>((g.m + kTileM - 1) / kTileM), static_cast<unsigned>(g.n / kTileN),
                  static_cast<unsigned>(g.experts));
  expert_gemm_w4a8_wgmma_kernel<<<grid, kThreads, kSharedBytesAllocated>>>(g);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace v41sim::kernels
