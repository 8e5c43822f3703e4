// V4.1 sparse attention decode on Hopper's warpgroup MMA (sm_90a): BF16
// operands, FP32 accumulators, as FlashMLA's decode kernels run, where
// sparse_decode_mma_cuda.cu runs the same math on mma.sync. Same grid, key
// list, splits and combine (sparse_decode_split.cuh); the layout, the split
// of the work between the two warpgroups and the softmax:
// sparse_decode_wgmma_tiles.h.
//
// Why two warpgroups that split the dimensions: a wgmma's M is 64 rows, all
// of V4.1's heads, so a tile's scores cannot be split by heads; O for 64
// heads x 512 dims is 256 FP32 registers a thread on one warpgroup, 128 on
// each of two. With the scores split the same way, a warpgroup reads only
// its half of each key, loads and widens it itself, and the two meet once a
// tile, to add their partial scores.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/attention/sparse_decode_cuda.h"
#include "kernels/attention/sparse_decode_split.cuh"
#include "kernels/attention/sparse_decode_wgmma_tiles.h"
#include "kernels/common/cp_async.cuh"
#include "kernels/common/cuda_check.h"
#include "kernels/common/cuda_device.h"
#include "kernels/common/dynamic_shared_memory.cuh"
#include "kernels/common/mbarrier.cuh"
#include "kernels/common/wgmma.cuh"

namespace v41sim::kernels {
namespace {

using namespace sparse_decode_wgmma;

// Named barriers: 1 and 2, each warpgroup's own (its stage is widened); 3,
// both (the partial scores).
constexpr int kBothWarpgroupsBarrier = 3;
__device__ int own_barrier(int warpgroup) { return 1 + warpgroup; }

// The shared base address, made anew where a loop uses it: the compiler
// would otherwise hoist every step's descriptor out of the loop and hold
// them all in registers (tens of them) beside O.
__device__ uint32_t fresh(uint32_t value) {
  uint32_t out;
  asm volatile("mov.b32 %0, %1;\n" : "=r"(out) : "r"(value));
  return out;
}

// A main entry's share as stored: four 16-byte loads of codes, one of 8 of scales.
__device__ MainShare load_main_share(const uint8_t* entry, const KeyShare& share) {
  MainShare main;
  const auto* codes = reinterpret_cast<const uint4*>(entry + main_codes_offset(share));
#pragma unroll
  for (int v = 0; v < kShareChunks / 4; ++v) {
    const uint4 word = codes[v];
    main.codes[4 * v] = word.x;
    main.codes[4 * v + 1] = word.y;
    main.codes[4 * v + 2] = word.z;
    main.codes[4 * v + 3] = word.w;
  }
  const uint2 scales = *reinterpret_cast<const uint2*>(entry + main_scales_offset(share));
  main.scales[0] = scales.x;
  main.scales[1] = scales.y;
  return main;
}

// Sixteen values g of the key's share widened into their place in the stage.
__device__ void widen_sixteen(const KeyEntry& key, const MainShare& main, const KeyShare& share,
                              uint8_t* stage, int g) {
  uint32_t out[8];
  widen_share_sixteen(key.kind, main, key.entry, share, g, out);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    *reinterpret_cast<uint4*>(stage + operand_offset(share.key, share.first_dim + 16 * g + 8 * half)) =
        make_uint4(out[4 * half], out[4 * half + 1], out[4 * half + 2], out[4 * half + 3]);
  }
}

// The key's share loaded and widened into its place in the stage, and
// whether the key is real. A main entry's share comes in five loads and is
// widened unrolled, each scale decoded once; a window entry's (the list's
// last two tiles) sixteen values at a time, in a loop that keeps its loads
// few, beside O and P in registers.
__device__ void widen_key(const KeyEntry& key, const KeyShare& share, uint8_t* stage, uint8_t* valid, int t) {
  if (key.kind == KeyKind::kWindow) {
#pragma unroll 1
    for (int g = 0; g < kShareSixteens; ++g) widen_sixteen(key, MainShare{}, share, stage, g);
  } else {
    MainShare main{};
    if (key.kind == KeyKind::kMain) main = load_main_share(key.entry, share);
#pragma unroll
    for (int g = 0; g < kShareSixteens; ++g) widen_sixteen(key, main, share, stage, g);
  }
  if (t % 2 == 0) valid[share.key] = key.kind != KeyKind::kNone;
}

// Adds the other warpgroup's partial scores to this one's: both then hold
// the tile's scores (the same sums: addition commutes).
__device__ void add_partner_scores(float (&s)[kScores], uint8_t* smem, int warpgroup, int t) {
  mbarrier::sync_named<kThreads>(kBothWarpgroupsBarrier);  // the other has read the last tile's
#pragma unroll
  for (int i = 0; i < kScores; i += 4)
    *reinterpret_cast<float4*>(smem + exchange_offset(warpgroup, t, i)) =
        make_float4(s[i], s[i + 1], s[i + 2], s[i + 3]);
  mbarrier::sync_named<kThreads>(kBothWarpgroupsBarrier);
#pragma unroll
  for (int i = 0; i < kScores; i += 4) {
    const float4 other = *reinterpret_cast<const float4*>(smem + exchange_offset(1 - warpgroup, t, i));
    s[i] += other.x;
    s[i + 1] += other.y;
    s[i + 2] += other.z;
    s[i + 3] += other.w;
  }
}

// The online softmax of the tile for the thread's two heads; returns the P
// fragment for P.V and rescales O.
__device__ void softmax_tile(float (&s)[kScores], const uint8_t* valid, RowStates& rows, float (&o)[kOutputs],
                             uint32_t (&p)[kValueSteps * 4], int t) {
  scale_and_mask(s, valid, t, rsqrtf(static_cast<float>(kLatentDim)));
  float maxima[2];
  thread_row_maxima(s, maxima);
#pragma unroll
  for (int r = 0; r < 2; ++r) {  // over the quad: the lanes holding the row's other keys
    maxima[r] = fmaxf(maxima[r], __shfl_xor_sync(0xffffffffu, maxima[r], 1));
    maxima[r] = fmaxf(maxima[r], __shfl_xor_sync(0xffffffffu, maxima[r], 2));
  }
  const SoftmaxStep step = softmax_step(s, maxima, rows);
  float sums[2] = {step.sums[0], step.sums[1]};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    sums[r] += __shfl_xor_sync(0xffffffffu, sums[r], 1);
    sums[r] += __shfl_xor_sync(0xffffffffu, sums[r], 2);
  }
  update_rows(rows, step, sums);
#pragma unroll
  for (int q = 0; q < kValueSteps * 4; ++q) p[q] = step.p[q];
  // Rarely needed after the first tiles (kRescaleMargin): skipped where no row of the warp's moved.
  if (__any_sync(0xffffffffu, step.correction[0] != 1.0f || step.correction[1] != 1.0f)) {
#pragma unroll
    for (int i = 0; i < kOutputs; ++i) o[i] *= step.correction[(i % 4) / 2];
  }
}

// The request's output (BF16) from this thread's part of O, where one CTA
// held the whole key list; else its partial output, and (warpgroup 0) the
// rows' max and sum.
__device__ void write_result(const SparseDecodeDevice& d, int64_t b, int split, const float (&o)[kOutputs],
                             const RowStates& rows, int warpgroup, int t) {
  const int64_t heads = d.shape.heads;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int h = wgmma::accumulator_row(t, 2 * r);
    if (h >= heads) continue;
    const int dim0 = warpgroup * kHalfDims;
    if (d.splits == 1) {
      const float factor = whole_list_factor(d.sink[h], rows.m[r], rows.l[r]);
      uint16_t* out = d.out + (b * heads + h) * kLatentDim + dim0;
#pragma unroll
      for (int j = 0; j < kOutputs / 4; ++j) {
        const int i = 4 * j + 2 * r;
        *reinterpret_cast<uint32_t*>(out + wgmma::accumulator_col(t, i)) =
            static_cast<uint32_t>(bf16_bits(o[i] * factor)) |
            (static_cast<uint32_t>(bf16_bits(o[i + 1] * factor)) << 16);
      }
      continue;
    }
    float* partial = partial_of(d, b, split, h);
#pragma unroll
    for (int j = 0; j < kOutputs / 4; ++j) {
      const int i = 4 * j + 2 * r;
      *reinterpret_cast<float2*>(partial + dim0 + wgmma::accumulator_col(t, i)) = make_float2(o[i], o[i + 1]);
    }
    if (warpgroup == 0 && t % 4 == 0) {
      partial[kLatentDim] = rows.m[r];
      partial[kLatentDim + 1] = rows.l[r];
    }
  }
}

__global__ void __launch_bounds__(kThreads, 1) sparse_decode_wgmma_kernel(SparseDecodeDevice d) {
  extern __shared__ uint8_t dynamic_smem[];
  uint8_t* smem = wgmma::atom_aligned(dynamic_smem);
  const uint32_t base = shared_address(smem);
  const int warpgroup = static_cast<int>(threadIdx.x) / wgmma::kThreads;
  const int t = static_cast<int>(threadIdx.x) % wgmma::kThreads;
  const int64_t b = blockIdx.y;
  const int split = static_cast<int>(blockIdx.x);
  const auto [begin, end] = split_range(d, split);
  const KeyShare share = key_share(warpgroup, t);

  const uint16_t* q = d.q + b * d.shape.heads * kLatentDim;
  for (int c = t; c < kQueryChunks; c += wgmma::kThreads) {
    const QueryChunk chunk = query_chunk(c, warpgroup, d.shape.heads);
    cp_async_16(smem + chunk.smem, q + (chunk.valid ? chunk.element : 0), chunk.valid);
  }
  cp_async_commit();
  KeyEntry next = find_key(key_list(d), b, begin + share.key, end);
  widen_key(next, share, smem + stage_offset(0), smem + valid_offset(warpgroup, 0), t);
  cp_async_wait<0>();
  // The queries and the first tile, for the tensor cores (the async proxy).
  wgmma::fence_shared_for_async_proxy();
  mbarrier::sync_named<wgmma::kThreads>(own_barrier(warpgroup));

  float o[kOutputs];
#pragma unroll
  for (int i = 0; i < kOutputs; ++i) o[i] = 0.0f;
  RowStates rows;
  uint32_t p[kValueSteps * 4];
  int stage = 0;
  for (int64_t tile = begin; tile < end; tile += kKeys, stage ^= 1) {
    float s[kScores];
    const uint32_t here = fresh(base);
    wgmma::fence();
#pragma unroll
    for (int step = 0; step < kScoreSteps; ++step) {
      wgmma::mma_m64n64k16_bf16(s, query_descriptor(here, warpgroup, step),
                                key_descriptor(here, stage, warpgroup, step), step > 0);
    }
    wgmma::commit_group();
    const bool more = tile + kKeys < end;
    if (more) next = find_key(key_list(d), b, tile + kKeys + share.key, end);
    wgmma::wait_group<0>();  // the scores, and the last tile's P.V
    add_partner_scores(s, smem, warpgroup, t);
    softmax_tile(s, smem + valid_offset(warpgroup, stage), rows, o, p, t);
    wgmma::fence();
#pragma unroll
    for (int step = 0; step < kValueSteps; ++step) {
      const uint32_t a[4] = {p[4 * step], p[4 * step + 1], p[4 * step + 2], p[4 * step + 3]};
      wgmma::mma_m64n256k16_bf16_rs(o, a, value_descriptor(fresh(base), stage, warpgroup, step));
    }
    wgmma::commit_group();
    // Under P.V: the next tile's entries loaded and widened into the other
    // stage, whose last readers were the last tile's steps (waited for above).
    if (more) {
      widen_key(next, share, smem + stage_offset(stage ^ 1), smem + valid_offset(warpgroup, stage ^ 1), t);
      wgmma::fence_shared_for_async_proxy();
    }
    mbarrier::sync_named<wgmma::kThreads>(own_barrier(warpgroup));
  }
  wgmma::wait_group<0>();
  write_result(d, b, split, o, rows, warpgroup, t);
}

}  // namespace

void launch_sparse_decode_wgmma_splits(const SparseDecodeDevice& d) {
  if (d.shape.heads <= 0 || d.shape.heads > kHeads || d.splits <= 0) {
    throw std::invalid_argument("sparse decode (wgmma): heads must be 1..64 and splits positive");
  }
  std::string why;
  if (!sm90a_device(&why)) throw std::runtime_error("sparse decode (wgmma): " + why);
  allow_shared_memory<sparse_decode_wgmma_kernel>(kSharedBytesAllocated);
  const dim3 grid(static_cast<unsigned>(d.splits), static_cast<unsigned>(d.shape.batch));
  sparse_decode_wgmma_kernel<<<grid, kThreads, kSharedBytesAllocated>>>(d);
}

}  // namespace v41sim::kernels
