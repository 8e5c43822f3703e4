// The lightning indexer's decode logits on Hopper's warpgroup MMA
// (indexer_wgmma_decode_cuda.cu), as plain host-and-device functions a CPU
// test replays: DeepGEMM's paged mqa_logits kind, where each request of a
// decode batch scores its own keys. A request's queries (its token and the
// drafts it verifies, up to kMaxRequestQueries) share its key tiles, as
// DeepGEMM's kernel takes a request's next_n queries in one CTA; requests
// share none.
//
// A CTA takes one request's queries and 16 tiles of its keys; it multiplies
// each tile by one query after another (the stage is released after the
// last), so a key is read once a request. The product is taken
// transposed as in prefill (indexer_wgmma_tiles.h): a tile's 64 keys are the
// wgmma's M rows, the query's 32 heads its N columns (m64n32k32, four steps
// over the 128 dimensions), so a thread's accumulators for one key row hold
// 8 heads and the head sum is 8 multiply-adds and two shuffles across its
// quad. The stages, their copies as stored and their widening to E4M3 with
// the group scales folded in are prefill's, handed over the same way, one
// warpgroup loading and widening, one computing. Where the layer builds the
// candidate pool, the 8 keys of a pool block lie in one warp (lanes 4 apart:
// rows 16 w + 0-7 and + 8-15), so a block's max is three more shuffles.
// A Reindex layer's logits in the pool take the same path over the pool's
// slots: a tile's 64 slots are 8 pool blocks, each block's 8 keys 544
// contiguous bytes of the request's keys, copied as stored.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"
#include "kernels/common/v41_shapes.h"
#include "kernels/common/wgmma_layout.h"
#include "kernels/indexer/index_key_block.h"
#include "kernels/indexer/indexer_wgmma_tiles.h"

namespace v41sim::kernels::indexer_wgmma_decode {

using indexer_wgmma::kChunk;
using indexer_wgmma::kHeads;
using indexer_wgmma::kKeys;
using indexer_wgmma::kLoadAhead;
using indexer_wgmma::kStageBytes;
using indexer_wgmma::kStages;
using indexer_wgmma::PartialCopy;

inline constexpr int kTilesPerCta = 16;                                 // 1,024 positions a CTA
inline constexpr int kAccumulators = kKeys * kHeads / wgmma::kThreads;  // 16 a thread
inline constexpr int kComputeThreads = wgmma::kThreads;
inline constexpr int kProducerThreads = wgmma::kThreads;
inline constexpr int kThreads = kComputeThreads + kProducerThreads;

// A request's queries a CTA holds: its token and up to 7 drafts (V4.1's
// draft block is 5).
inline constexpr int kMaxRequestQueries = 8;

// Shared memory: each of the request's queries' heads (swizzled, 4 KB a
// query), then prefill's stages; sized by the queries a request, so a
// request of one query holds 3 CTAs an SM.
inline constexpr int kQueryTileBytes = kHeads * kIndexDim;
static_assert(kQueryTileBytes % wgmma::kAtomBytes == 0, "the stages start on a swizzle atom");
constexpr indexer_wgmma::PipelineLayout layout_for(int request_queries) {
  return indexer_wgmma::pipeline_layout(request_queries * kQueryTileBytes);
}
static_assert(layout_for(kMaxRequestQueries).allocated <= 227 * 1024, "within Hopper's shared memory");
inline constexpr int kQueryChunks = kHeads * (kIndexDim / kChunk);

// Query chunk c of the request's j-th query `query`: 16 bytes of head c / 8
// into its swizzled row of the j-th query tile.
V41_HD PartialCopy query_copy(int c, int j, int64_t query) {
  const int head = c / (kIndexDim / kChunk), byte = (c % (kIndexDim / kChunk)) * kChunk;
  return {j * kQueryTileBytes + wgmma::swizzled_offset(head, byte),
          (query * kHeads + head) * kIndexDim + byte, kChunk};
}

inline constexpr int kPoolBlockBytes = static_cast<int>(kV41PoolBlockSize) * kIndexKeyBytes;  // 544
inline constexpr int kPoolBlockChunks = kPoolBlockBytes / kChunk;                             // 34
static_assert(kPoolBlockBytes % kChunk == 0 && kKeys % kV41PoolBlockSize == 0,
              "a tile is whole pool blocks of whole chunks");

// Chunk c of a Reindex tile whose slots start at first_slot (a multiple of
// 64): block c / 34 of the tile, pool block pool_row[first_slot / 8 + c /
// 34] of the request's keys; the bytes past the last position, and those of
// blocks past the pool's end, zero-filled. In the stage where key_copy puts
// chunk c, so the widening is prefill's.
V41_HD PartialCopy pool_key_copy(int c, int64_t first_slot, const int32_t* pool_row, int64_t pool_blocks,
                                 int64_t positions) {
  const int smem = indexer_wgmma::kRawOffset + c * kChunk;
  const int64_t block = first_slot / kV41PoolBlockSize + c / kPoolBlockChunks;
  if (block >= pool_blocks) return {smem, 0, 0};
  const int64_t global = int64_t{pool_row[block]} * kPoolBlockBytes + (c % kPoolBlockChunks) * kChunk;
  const int64_t left = positions * kIndexKeyBytes - global;
  const int bytes = left <= 0 ? 0 : (left >= kChunk ? kChunk : static_cast<int>(left));
  return {smem, bytes > 0 ? global : 0, bytes};
}

// Where `request`'s keys start: each request its own `positions` keys.
V41_HD int64_t key_set_offset(int64_t request, int64_t positions) {
  return request * positions * kIndexKeyBytes;
}

// Accumulator i's key row of the tile (0-63) and head (0-31).
V41_HD int key_row(int t, int i) { return wgmma::accumulator_row(t, i); }
V41_HD int head_of(int t, int i) { return wgmma::accumulator_col(t, i); }

// Which of a thread's two key rows (row, row + 8) accumulator i adds to.
V41_HD int row_half(int i) { return (i % 4) / 2; }

// The lane of a quad that stores the logit of its row half r (both hold it).
V41_HD bool stores_logit(int t, int r) { return t % 4 == r; }

// The lane of a warp that stores the max of its pool block r (the warp's
// rows 16 w + 8 r to + 7: positions first + 16 w + 8 r on, a block since
// tiles start at multiples of 64).
V41_HD bool stores_block_max(int t, int r) { return t % 32 == r; }

}  // namespace v41sim::kernels::indexer_wgmma_decode
