// V4.1 sparse attention decode on tensor cores: mma.sync.m16n8k16 with BF16
// operands and FP32 accumulators (sm_80 and later, so Hopper and Blackwell).
//
// Same grid, key list, splits and combine as the FP32 baseline
// (sparse_decode_split.cuh); who does what in a CTA:
// sparse_decode_mma_tiles.h. Per tile of 64 keys, the entries are gathered
// as stored into shared memory by cp.async while the CTA computes on the
// tile before, then widened to BF16 there. That is exact: an FP4 value
// times an E4M3 scale, or an FP8 value times a power of two, needs at most
// 5 significant bits, BF16 has 8. Only the softmax weights P are rounded to
// BF16 (Q comes in BF16).
// 64 heads share every key, so the kernel does ~455 FLOP per byte of FP4
// entry: it is bound by the tensor cores, not HBM (kernels/README.md).
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/attention/sparse_decode_cuda.h"
#include "kernels/attention/sparse_decode_mma_tiles.h"
#include "kernels/attention/sparse_decode_split.cuh"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/dynamic_shared_memory.cuh"
#include "kernels/common/mma_fragments.h"
#include "kernels/common/mma_sync.cuh"

namespace v41sim::kernels {
namespace {

using namespace sparse_decode_mma;
static_assert(kTile == kSplitBlockKeys, "a split's cost counts this kernel's tiles (sparse_decode_splits.h)");

// Starts copying the tile's entries, as stored, into raw_s (cp.async: they
// land while the CTA computes on the previous tile) and notes each key's
// kind; the caller commits the copies and waits for them before widening.
// Each thread looks its key's entry up once and copies every 4th of its chunks.
__device__ void stage_tile(const SparseDecodeDevice& d, int64_t b, int64_t tile, int64_t end, uint8_t* raw_s,
                           int* kind_s) {
  const KeyPart mine = key_part(threadIdx.x);
  const KeyEntry key = find_key(key_list(d), b, tile + mine.key, end);
  if (mine.part == 0) kind_s[mine.key] = static_cast<int>(key.kind);
  if (key.kind == KeyKind::kNone) return;
  const int chunks = (key.kind == KeyKind::kMain ? kMainEntryBytes : kWindowEntryBytes) / kChunk;
  for (int chunk = mine.part; chunk < chunks; chunk += kKeyParts)
    cp_async_16(raw_s + mine.key * kRawStride + chunk * kChunk, key.entry + chunk * kChunk, true);
}

// Widens the staged entries into k_s (zero rows for padding) and marks which are real.
__device__ void widen_tile(const uint8_t* raw_s, const int* kind_s, uint16_t* k_s, int* valid_s) {
  const KeyPart mine = key_part(threadIdx.x);
  const auto kind = static_cast<KeyKind>(kind_s[mine.key]);
  widen_key_part(kind, raw_s + mine.key * kRawStride, mine.part,
                 reinterpret_cast<uint32_t*>(k_s + mine.key * kRowStride + mine.part * kDimsPerPart));
  if (mine.part == 0) valid_s[mine.key] = kind != KeyKind::kNone;
}

// S = Q.K^T for this warp's 16 heads x 32 keys, scaled; padding keys get -inf.
__device__ void score_tile(const uint16_t* q_s, const uint16_t* k_s, const int* valid_s, float* s_s,
                           int head0, int key0, mma::Lane lane, float scale) {
  float acc[kScoreTiles][4] = {};
  for (int k0 = 0; k0 < kLatentDim; k0 += mma::kK) {
    uint32_t a[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) a[r] = mma::load_a(q_s, kRowStride, head0, k0, lane, r);
#pragma unroll
    for (int t = 0; t < kScoreTiles; ++t) {
      uint32_t bf[2];
#pragma unroll
      for (int r = 0; r < 2; ++r)
        bf[r] = mma::load_b_n_major(k_s, kRowStride, key0 + t * mma::kN, k0, lane, r);
      mma::mma_bf16_16816(acc[t], a, bf);
    }
  }
#pragma unroll
  for (int t = 0; t < kScoreTiles; ++t) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = head0 + mma::c_row(lane, i);
      const int col = key0 + t * mma::kN + mma::c_col(lane, i);
      s_s[row * kScoreStride + col] = masked_score(acc[t][i], valid_s[col] != 0, scale);
    }
  }
}

// Online softmax over the tile: 4 consecutive threads a head, 16 keys each
// (head_part). Writes P (BF16) and, per head, the factor that rescales what
// O holds so far.
__device__ void softmax_tile(const float* s_s, uint16_t* p_s, float* m_s, float* l_s, float* correction_s) {
  const HeadPart mine = head_part(threadIdx.x);
  const float* s = s_s + mine.head * kScoreStride;
  float tile_max = part_max(s, mine);
  tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
  tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
  const HeadState old{m_s[mine.head], l_s[mine.head]};
  const ReferenceMax reference = next_reference_max(old.m, tile_max);  // lazy (kRescaleMargin)
  float sum = weigh_part(s, mine, reference.max, p_s + mine.head * kProbStride);
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  sum += __shfl_xor_sync(0xffffffffu, sum, 2);
  if (mine.first_key == 0) {  // after the shuffles: all four threads have read the old state
    const HeadState next = next_head_state(old, reference, sum);
    correction_s[mine.head] = reference.correction;
    l_s[mine.head] = next.l;
    m_s[mine.head] = next.m;
  }
}

// O = O * correction + P.V for this warp's 16 heads x 256 dims.
__device__ void accumulate_tile(const uint16_t* p_s, const uint16_t* k_s, const float* correction_s,
                                float (&o)[kOutputTiles][4], int head0, int dim0, mma::Lane lane) {
  const float low = correction_s[head0 + mma::c_row(lane, 0)];
  const float high = correction_s[head0 + mma::c_row(lane, 2)];
  if (__any_sync(0xffffffffu, low != 1.0f || high != 1.0f)) {  // rare after the first tiles (lazy)
#pragma unroll
    for (int t = 0; t < kOutputTiles; ++t) {
      o[t][0] *= low;
      o[t][1] *= low;
      o[t][2] *= high;
      o[t][3] *= high;
    }
  }
#pragma unroll
  for (int k0 = 0; k0 < kTile; k0 += mma::kK) {
    uint32_t a[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) a[r] = mma::load_a(p_s, kProbStride, head0, k0, lane, r);
#pragma unroll
    for (int t = 0; t < kOutputTiles; ++t) {
      uint32_t bf[2];
#pragma unroll
      for (int r = 0; r < 2; ++r)
        bf[r] = mma::load_b_k_major(k_s, kRowStride, k0, dim0 + t * mma::kN, lane, r);
      mma::mma_bf16_16816(o[t], a, bf);
    }
  }
}

// The request's output (BF16) from this warp's 16 heads x 256 dims of O,
// where one CTA held the whole key list.
__device__ void write_output(const SparseDecodeDevice& d, int64_t b, const float (&o)[kOutputTiles][4],
                             const float* m_s, const float* l_s, int head0, int dim0, mma::Lane lane) {
#pragma unroll
  for (int rows = 0; rows < 2; ++rows) {  // accumulator registers 0-1: row c_row(lane, 0); 2-3: 8 below
    const int h = head0 + mma::c_row(lane, 2 * rows);
    if (h >= d.shape.heads) continue;
    const float factor = whole_list_factor(d.sink[h], m_s[h], l_s[h]);
    uint16_t* out = d.out + (b * d.shape.heads + h) * kLatentDim + dim0;
#pragma unroll
    for (int t = 0; t < kOutputTiles; ++t) {
      const int col = t * mma::kN + mma::c_col(lane, 2 * rows);  // even: the pair's first column
      *reinterpret_cast<uint32_t*>(out + col) =
          mma::pack(mma::to_bf16(o[t][2 * rows] * factor), mma::to_bf16(o[t][2 * rows + 1] * factor));
    }
  }
}

__global__ void __launch_bounds__(kThreads, 1) sparse_decode_mma_kernel(SparseDecodeDevice d) {
  extern __shared__ __align__(16) unsigned char smem[];
  auto* q_s = reinterpret_cast<uint16_t*>(smem + Smem::q);
  auto* k_s = reinterpret_cast<uint16_t*>(smem + Smem::k);
  auto* s_s = reinterpret_cast<float*>(smem + Smem::s);
  auto* p_s = reinterpret_cast<uint16_t*>(smem + Smem::p);
  auto* m_s = reinterpret_cast<float*>(smem + Smem::m);
  auto* l_s = reinterpret_cast<float*>(smem + Smem::l);
  auto* correction_s = reinterpret_cast<float*>(smem + Smem::correction);
  auto* valid_s = reinterpret_cast<int*>(smem + Smem::valid);
  auto* raw_s = reinterpret_cast<uint8_t*>(smem + Smem::raw);
  auto* kind_s = reinterpret_cast<int*>(smem + Smem::kind);

  const int64_t b = blockIdx.y;
  const int split = blockIdx.x;
  const int64_t heads = d.shape.heads;
  const auto [begin, end] = split_range(d, split);
  const WarpBlocks blocks = warp_blocks(threadIdx.x / 32);
  const mma::Lane lane = mma::lane_of(threadIdx.x % 32);

  for (int i = threadIdx.x; i < kHeads * kLatentDim; i += kThreads) {
    const int h = i / kLatentDim;
    const int c = i % kLatentDim;
    q_s[h * kRowStride + c] = h < heads ? d.q[(b * heads + h) * kLatentDim + c] : uint16_t{0};
  }
  for (int h = threadIdx.x; h < kHeads; h += kThreads) {
    m_s[h] = -INFINITY;
    l_s[h] = 0.0f;
  }
  float o[kOutputTiles][4] = {};
  const float scale = rsqrtf(static_cast<float>(kLatentDim));
  if (begin < end) stage_tile(d, b, begin, end, raw_s, kind_s);
  cp_async_commit();
  for (int64_t tile = begin; tile < end; tile += kTile) {
    cp_async_wait<0>();  // this tile's entries have landed
    __syncthreads();     // for every thread; and the previous tile's P.V is done with k_s and p_s
    widen_tile(raw_s, kind_s, k_s, valid_s);
    __syncthreads();  // raw_s and kind_s are free: the next tile's entries come in under this one's math
    if (tile + kTile < end) stage_tile(d, b, tile + kTile, end, raw_s, kind_s);
    cp_async_commit();
    score_tile(q_s, k_s, valid_s, s_s, blocks.head0, blocks.key0, lane, scale);
    __syncthreads();
    softmax_tile(s_s, p_s, m_s, l_s, correction_s);
    __syncthreads();
    accumulate_tile(p_s, k_s, correction_s, o, blocks.head0, blocks.dim0, lane);
  }
  __syncthreads();
  if (d.splits == 1) {  // the whole key list: finish the output here, no partials, no combine
    write_output(d, b, o, m_s, l_s, blocks.head0, blocks.dim0, lane);
    return;
  }
#pragma unroll
  for (int t = 0; t < kOutputTiles; ++t) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int h = blocks.head0 + mma::c_row(lane, i);
      if (h < heads) partial_of(d, b, split, h)[blocks.dim0 + t * mma::kN + mma::c_col(lane, i)] = o[t][i];
    }
  }
  for (int h = threadIdx.x; h < heads; h += kThreads) {
    partial_of(d, b, split, h)[kLatentDim] = m_s[h];
    partial_of(d, b, split, h)[kLatentDim + 1] = l_s[h];
  }
}

}  // namespace

void launch_sparse_decode_mma(const SparseDecodeDevice& d) {
  if (d.shape.heads <= 0 || d.shape.heads > kHeads || d.splits <= 0) {
    throw std::invalid_argument("sparse decode (mma): heads must be 1..64 and splits positive");
  }
  allow_shared_memory<sparse_decode_mma_kernel>(static_cast<int>(Smem::bytes));
  const dim3 grid(static_cast<unsigned>(d.splits), static_cast<unsigned>(d.shape.batch));
  sparse_decode_mma_kernel<<<grid, kThreads, Smem::bytes>>>(d);
  if (d.splits > 1) launch_sparse_decode_combine(d);
}

std::vector<float> sparse_decode_mma_cuda(const SparseDecodeInputs& in, int splits) {
  return run_sparse_decode(in, launch_sparse_decode_mma, splits);
}

}  // namespace v41sim::kernels
