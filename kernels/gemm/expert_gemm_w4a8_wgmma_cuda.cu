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
//
// A second schedule, warp-specialized as DeepGEMM's kernels are: a third
// warpgroup only loads and widens, the two others only compute, each stage
// handed over through mbarriers (expert_gemm_w4a8_wgmma_tiling.h's
// warp_specialized), so no CTA-wide barrier holds the computing warpgroups in
// step and one promotes while the other's wgmma steps run (169 KB).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/common/cp_async.cuh"
#include "kernels/common/cuda_check.h"
#include "kernels/common/cuda_device.h"
#include "kernels/common/dynamic_shared_memory.cuh"
#include "kernels/common/mbarrier.cuh"
#include "kernels/common/wgmma.cuh"
#include "kernels/gemm/expert_gemm.h"
#include "kernels/gemm/expert_gemm_w4a8_wgmma_tiling.h"

namespace v41sim::kernels {
namespace {

using namespace w4a8;
using namespace w4a8::wgmma_tiles;

// Block kb's copies into a stage, spread over `threads` threads from `thread`.
__device__ void load_stage(const ExpertGemmW4A8& g, const Problem& p, const CtaOrigin& o, int64_t kb,
                           uint8_t* stage, int thread, int threads) {
  for (int c = thread; c < kActivationChunks; c += threads) {
    const Copy copy = activation_copy(c, p, o, kb);
    cp_async_16(stage + copy.smem, g.activations + copy.global, copy.valid);
  }
  for (int c = thread; c < kWeightChunks; c += threads) {
    const Copy copy = weight_copy(c, p, o, kb);
    cp_async_16(stage + copy.smem, g.packed_weights + copy.global, true);
  }
  for (int r = thread; r < kTileN; r += threads) {
    const Copy copy = scale_copy(r, p, o, kb);
    cp_async_4(stage + copy.smem, g.weight_scales + copy.global);
  }
}

// A stage's weights into a widened tile and its rows' promotion scales. Each
// thread then fences its shared-memory writes for the tensor cores (the
// async proxy): the widened tile's stores, and the activations its cp.async
// copies landed before its last wait; a barrier follows before any wgmma.
__device__ void widen_stage(const uint8_t* stage, const E2m1ToE4m3Table* tables, uint8_t* tile,
                            float* row_scales, int thread, int threads) {
  for (int q = thread; q < kWidenedChunks; q += threads) {
    const WidenedChunk chunk = widen_chunk(stage, q, tables);
    *reinterpret_cast<uint4*>(tile + chunk.tile_offset) =
        make_uint4(chunk.words[0], chunk.words[1], chunk.words[2], chunk.words[3]);
  }
  for (int r = thread; r < kTileN; r += threads) row_scales[r] = row_scale(stage, r);
  wgmma::fence_shared_for_async_proxy();
}

// A k-block's four k32 steps for a warpgroup's 64 rows, into `partial`.
__device__ void issue_block(float (&partial)[64], const uint8_t* activations, const uint8_t* weights) {
  wgmma::fence();
#pragma unroll
  for (int step = 0; step < kStepsPerBlock; ++step) {
    wgmma::mma_m64n128k32_e4m3(partial, wgmma::descriptor(shared_address(activations + step * wgmma::kK)),
                               wgmma::descriptor(shared_address(weights + step * wgmma::kK)), step > 0);
  }
  wgmma::commit_group();
}

// A block's partial sums into the accumulators, each column (weight row)
// times its block scale.
__device__ void promote(float (&acc)[64], const float (&partial)[64], const float* row_scales, int t) {
#pragma unroll
  for (int i = 0; i < 64; i += 2) {  // columns i and i + 1 are adjacent weight rows
    const float2 s = *reinterpret_cast<const float2*>(row_scales + wgmma::accumulator_col(t, i));
    acc[i] += partial[i] * s.x;
    acc[i + 1] += partial[i + 1] * s.y;
  }
}

__device__ void store_output(const ExpertGemmW4A8& g, const CtaOrigin& o, const float (&acc)[64],
                             int warpgroup, int t) {
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

// m-tiles fastest: neighbouring CTAs read the same weights, from L2.
__device__ CtaOrigin cta_origin() {
  return {blockIdx.z, static_cast<int64_t>(blockIdx.x) * kTileM, static_cast<int64_t>(blockIdx.y) * kTileN};
}

__global__ void __launch_bounds__(kThreads, 1) expert_gemm_w4a8_wgmma_kernel(ExpertGemmW4A8 g) {
  extern __shared__ uint8_t dynamic_smem[];
  uint8_t* smem = wgmma::atom_aligned(dynamic_smem);
  auto* tables = reinterpret_cast<E2m1ToE4m3Table*>(smem + kTablesOffset);
  auto* row_scales = reinterpret_cast<float*>(smem + kRowScalesOffset);
  const Problem p{g.experts, g.m, g.n, g.k};
  const CtaOrigin o = cta_origin();
  const int64_t blocks = g.k / kBlockK;
  const int thread = static_cast<int>(threadIdx.x);
  const int warpgroup = thread / wgmma::kThreads;
  const int t = thread % wgmma::kThreads;
  if (thread < kFoldingTables) {
    tables[thread] = e2m1_to_e4m3_table(thread);
  }

  // Prologue: stages - 1 blocks in flight; every iteration commits one group
  // (empty past the end), so "at most stages - 2 pending" means the next
  // block has landed.
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < blocks) load_stage(g, p, o, s, smem + s * kStageBytes, thread, kThreads);
    cp_async_commit();
  }
  cp_async_wait<kStages - 2>();
  __syncthreads();  // block 0 and the tables visible
  widen_stage(smem, tables, smem + kWeightTilesOffset, row_scales, thread, kThreads);
  __syncthreads();

  float acc[64] = {};
  float partial[64];
  for (int64_t kb = 0; kb < blocks; ++kb) {
    // The stage block kb - 1 used is free: its wgmma steps were waited for
    // and its weights widened before the last barrier.
    const int64_t next = kb + kStages - 1;
    if (next < blocks) load_stage(g, p, o, next, smem + (next % kStages) * kStageBytes, thread, kThreads);
    cp_async_commit();

    issue_block(partial, smem + (kb % kStages) * kStageBytes + warpgroup * wgmma::kM * wgmma::kRowBytes,
                smem + kWeightTilesOffset + (kb % 2) * kWeightTileBytes);
    if (kb + 1 < blocks) {  // widen the next block under this one's tensor-core steps
      cp_async_wait<kStages - 2>();
      __syncthreads();
      widen_stage(smem + ((kb + 1) % kStages) * kStageBytes, tables,
                  smem + kWeightTilesOffset + ((kb + 1) % 2) * kWeightTileBytes,
                  row_scales + ((kb + 1) % 2) * kTileN, thread, kThreads);
    }
    wgmma::wait_group<0>();
    promote(acc, partial, row_scales + (kb % 2) * kTileN, t);
    __syncthreads();
  }
  store_output(g, o, acc, warpgroup, t);
}

namespace ws = warp_specialized;

// The producer warpgroup: loads block j into its stage once the computing
// warpgroups released the stage's last block, and widens block j - kLoadAhead
// meanwhile (its copies waited for, then all producer threads' copies met at
// a named barrier), handing each widened stage over on its full barrier.
__device__ void produce(const ExpertGemmW4A8& g, const Problem& p, const CtaOrigin& o, uint8_t* smem,
                        uint64_t* full, uint64_t* empty, const E2m1ToE4m3Table* tables, int t) {
  const int64_t blocks = g.k / kBlockK;
  for (int64_t j = 0; j < blocks + ws::kLoadAhead; ++j) {
    if (j < blocks) {
      const int s = ws::Handover::stage_of(j);
      if (ws::Handover::load_waits_for_release(j)) mbarrier::wait(&empty[s], ws::Handover::release_parity(j));
      load_stage(g, p, o, j, smem + s * ws::kStageBytes, t, ws::kProducerThreads);
    }
    cp_async_commit();
    const int64_t kb = j - ws::kLoadAhead;
    if (kb < 0) continue;
    cp_async_wait<ws::kLoadAhead>();
    mbarrier::sync_threads<1, ws::kProducerThreads>();
    uint8_t* stage = smem + ws::Handover::stage_of(kb) * ws::kStageBytes;
    widen_stage(stage, tables, stage + ws::kWeightTileOffset,
                reinterpret_cast<float*>(stage + ws::kRowScalesOffset), t, ws::kProducerThreads);
    mbarrier::arrive(&full[ws::Handover::stage_of(kb)]);
  }
}

// A computing warpgroup: each block's steps once its stage is full, its sums
// promoted, the stage released.
__device__ void compute(const ExpertGemmW4A8& g, const CtaOrigin& o, uint8_t* smem, uint64_t* full,
                        uint64_t* empty, int warpgroup, int t) {
  const int64_t blocks = g.k / kBlockK;
  float acc[64] = {};
  float partial[64];
  for (int64_t kb = 0; kb < blocks; ++kb) {
    const int s = ws::Handover::stage_of(kb);
    mbarrier::wait(&full[s], ws::Handover::full_parity(kb));
    const uint8_t* stage = smem + s * ws::kStageBytes;
    issue_block(partial, stage + warpgroup * wgmma::kM * wgmma::kRowBytes, stage + ws::kWeightTileOffset);
    wgmma::wait_group<0>();
    promote(acc, partial, reinterpret_cast<const float*>(stage + ws::kRowScalesOffset), t);
    mbarrier::arrive(&empty[s]);
  }
  store_output(g, o, acc, warpgroup, t);
}

// Warpgroups 0 and 1 compute (rows 0-63, 64-127), warpgroup 2 produces.
__global__ void __launch_bounds__(ws::kThreads, 1) expert_gemm_w4a8_wgmma_ws_kernel(ExpertGemmW4A8 g) {
  extern __shared__ uint8_t dynamic_smem[];
  uint8_t* smem = wgmma::atom_aligned(dynamic_smem);
  auto* full = reinterpret_cast<uint64_t*>(smem + ws::kBarriersOffset);
  uint64_t* empty = full + ws::kStages;
  auto* tables = reinterpret_cast<E2m1ToE4m3Table*>(smem + ws::kTablesOffset);
  const int thread = static_cast<int>(threadIdx.x);
  const int warpgroup = thread / wgmma::kThreads;
  const int t = thread % wgmma::kThreads;
  if (thread < kFoldingTables) tables[thread] = e2m1_to_e4m3_table(thread);
  if (thread == 0) {
    for (int s = 0; s < ws::kStages; ++s) {
      mbarrier::init(&full[s], ws::kProducerThreads);
      mbarrier::init(&empty[s], ws::kComputeThreads);
    }
  }
  __syncthreads();  // the last CTA-wide barrier: the roles part here
  const CtaOrigin o = cta_origin();
  if (warpgroup == kWarpgroups) {
    produce(g, {g.experts, g.m, g.n, g.k}, o, smem, full, empty, tables, t);
  } else {
    compute(g, o, smem, full, empty, warpgroup, t);
  }
}

void launch(void (*kernel)(ExpertGemmW4A8), const ExpertGemmW4A8& g, int threads, int shared_bytes) {
  const dim3 grid(static_cast<unsigned>((g.m + kTileM - 1) / kTileM), static_cast<unsigned>(g.n / kTileN),
                  static_cast<unsigned>(g.experts));
  kernel<<<grid, threads, shared_bytes>>>(g);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void run_expert_gemm_w4a8_wgmma(const ExpertGemmW4A8& g, WgmmaSchedule schedule) {
  if (g.experts <= 0 || g.experts > 65535 || g.m <= 0 || g.n <= 0 || g.n % kTileN != 0 || g.k <= 0 ||
      g.k % kBlockK != 0 || g.n / kTileN > 65535 || (g.m + kTileM - 1) / kTileM > 2147483647) {
    throw std::invalid_argument(
        "expert gemm w4a8 (wgmma): needs 1-65535 experts, m > 0, n a multiple of 128, k of 128");
  }
  std::string why;
  if (!sm90a_device(&why)) throw std::runtime_error("expert gemm w4a8 (wgmma): " + why);
  if (schedule == WgmmaSchedule::kWarpSpecialized) {
    allow_shared_memory<expert_gemm_w4a8_wgmma_ws_kernel>(ws::kSharedBytesAllocated);
    launch(expert_gemm_w4a8_wgmma_ws_kernel, g, ws::kThreads, ws::kSharedBytesAllocated);
  } else {
    allow_shared_memory<expert_gemm_w4a8_wgmma_kernel>(kSharedBytesAllocated);
    launch(expert_gemm_w4a8_wgmma_kernel, g, kThreads, kSharedBytesAllocated);
  }
}

}  // namespace v41sim::kernels
