// The pipeline of the FP8 wgmma indexer kernels (prefill and decode): its
// barriers and folding tables, and the producer warpgroup, which copies
// each tile's keys as stored into a stage once the computing warpgroups
// released the tile that stage held before, widens the tile kLoadAhead
// before meanwhile (E4M3, group scales folded in, the keys' scales beside)
// and hands it over on the stage's full barrier (indexer_wgmma_tiles.h;
// kernels/common/stage_handover.h).
#pragma once

#include <cstdint>

#include "kernels/common/cp_async.cuh"
#include "kernels/common/mbarrier.cuh"
#include "kernels/common/wgmma.cuh"
#include "kernels/indexer/indexer_wgmma_tiles.h"

namespace v41sim::kernels::indexer_wgmma {

struct Pipeline {
  uint64_t* full;   // [kStages], completed by the producer's threads
  uint64_t* empty;  // [kStages], by the computing threads
  const E2m1ToE4m3Table* tables;
};

// The barriers and the folding tables where `layout` puts them in `smem`,
// set up by the CTA; its last CTA-wide barrier, after which the roles part.
__device__ inline Pipeline set_up_pipeline(uint8_t* smem, PipelineLayout layout, int compute_threads) {
  auto* full = reinterpret_cast<uint64_t*>(smem + layout.barriers);
  uint64_t* empty = full + kStages;
  auto* tables = reinterpret_cast<E2m1ToE4m3Table*>(smem + layout.tables);
  const int thread = static_cast<int>(threadIdx.x);
  if (thread < kFoldingTables) tables[thread] = e2m1_to_e4m3_table(thread);
  if (thread == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrier::init(&full[s], kProducerThreads);
      mbarrier::init(&empty[s], compute_threads);
    }
  }
  __syncthreads();
  return {full, empty, tables};
}

// Waits until tile kb's stage holds its widened keys; returns the stage.
__device__ inline const uint8_t* wait_for_tile(const uint8_t* stages, const Pipeline& pipe, int64_t kb) {
  const int s = Handover::stage_of(kb);
  mbarrier::wait(&pipe.full[s], Handover::full_parity(kb));
  return stages + s * kStageBytes;
}

// A computing warpgroup's product of the widened keys in `stage` (A, 64
// rows) by the query rows at `queries` (B, K-major) over the 128
// dimensions, four k32 steps of an m64n128k32 (64 accumulators a thread) or
// m64n32k32 (16), and waits for them.
template <int kAccumulators>
__device__ void multiply_stage(float (&acc)[kAccumulators], const uint8_t* stage, const uint8_t* queries) {
  wgmma::fence();
#pragma unroll
  for (int step = 0; step < wgmma::kRowBytes / wgmma::kK; ++step) {
    const uint64_t a = wgmma::descriptor(shared_address(stage + step * wgmma::kK));
    const uint64_t b = wgmma::descriptor(shared_address(queries + step * wgmma::kK));
    wgmma::mma_k32_e4m3(acc, a, b, step > 0);
  }
  wgmma::commit_group();
  wgmma::wait_group<0>();
}

// Both for tile kb: waits for its stage and multiplies it by `queries`.
// Returns the stage (its keys' scales).
template <int kAccumulators>
__device__ const uint8_t* multiply_tile(float (&acc)[kAccumulators], const uint8_t* stages,
                                        const uint8_t* queries, const Pipeline& pipe, int64_t kb) {
  const uint8_t* stage = wait_for_tile(stages, pipe, kb);
  multiply_stage(acc, stage, queries);
  return stage;
}

// Tiles 0 to tiles - 1 of keys into the stages from `stages` on, chunk c
// of tile j from keys + copy_of(c, j).global (a PartialCopy: key_copy for
// consecutive positions, zero-filled past the last); `copy_queries(t)`
// issues the query copies with the first tile's. Thread t of
// kProducerThreads.
template <typename CopyOf, typename CopyQueries>
__device__ void produce_key_tiles(const uint8_t* keys, int64_t tiles, uint8_t* stages, const Pipeline& pipe,
                                  int t, CopyOf&& copy_of, CopyQueries&& copy_queries) {
  for (int64_t j = 0; j < tiles + kLoadAhead; ++j) {
    if (j < tiles) {
      const int s = Handover::stage_of(j);
      if (Handover::load_waits_for_release(j)) mbarrier::wait(&pipe.empty[s], Handover::release_parity(j));
      if (j == 0) copy_queries(t);
      uint8_t* stage = stages + s * kStageBytes;
      for (int c = t; c < kRawChunks; c += kProducerThreads) {
        const PartialCopy copy = copy_of(c, j);
        cp_async_16_partial(stage + copy.smem, keys + copy.global, copy.bytes);
      }
    }
    cp_async_commit();
    const int64_t kb = j - kLoadAhead;
    if (kb < 0) continue;
    cp_async_wait<kLoadAhead>();
    mbarrier::sync_threads<1, kProducerThreads>();  // every producer thread's copies of tile kb landed
    uint8_t* stage = stages + Handover::stage_of(kb) * kStageBytes;
    for (int q = t; q < kWidenedChunks; q += kProducerThreads) {
      const WidenedChunk chunk = widen_key_chunk(stage, q, pipe.tables);
      *reinterpret_cast<uint4*>(stage + chunk.tile_offset) =
          make_uint4(chunk.words[0], chunk.words[1], chunk.words[2], chunk.words[3]);
    }
    for (int r = t; r < kKeys; r += kProducerThreads)
      reinterpret_cast<float*>(stage + kKeyScalesOffset)[r] = key_scale(stage, r);
    // The widened keys, and the queries and keys this thread's copies landed,
    // for the tensor cores (the async proxy); the full barrier releases them.
    wgmma::fence_shared_for_async_proxy();
    mbarrier::arrive(&pipe.full[Handover::stage_of(kb)]);
  }
}

}  // namespace v41sim::kernels::indexer_wgmma
