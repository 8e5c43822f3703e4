// What the sparse-decode kernels (FP32 baseline and tensor-core) share on
// the device: their requests' key lists (walked by find_key,
// sparse_decode_types.h), the slots of a split, where a split's partial
// result goes, and the kernel that merges the splits with the attention sink
// by log-sum-exp weights.
#pragma once

#include <cuda_runtime.h>

#include "kernels/attention/sparse_decode_cuda.h"

namespace v41sim::kernels {

// The key lists of the device's requests (find_key walks them).
__device__ inline KeyList key_list(const SparseDecodeDevice& d) {
  return {d.topk, d.shape.topk, d.main_kv, d.window, d.window_len};
}

// The slots split `split` of `splits` covers: [begin, end).
struct SplitRange {
  int64_t begin;
  int64_t end;
};
__device__ inline SplitRange split_range(const SparseDecodeDevice& d, int split) {
  const int64_t slots = d.shape.topk + kWindowTokens;
  const int64_t per_split = (slots + d.splits - 1) / d.splits;
  const int64_t begin = split * per_split;
  return {begin, begin + per_split < slots ? begin + per_split : slots};
}

// Partial result of (request, split, head) (kPartialFloats).
__device__ inline float* partial_of(const SparseDecodeDevice& d, int64_t b, int split, int64_t head) {
  return d.workspace + ((b * d.splits + split) * d.shape.heads + head) * kPartialFloats;
}

// Merges the splits and the sink (sparse_decode_cuda.cu); the launchers call
// it where a request's keys were split.
void launch_sparse_decode_combine(const SparseDecodeDevice& d);

// The wgmma kernel's splits alone (sparse_decode_wgmma_cuda.cu, built for
// sm_90a in a library of its own); launch_sparse_decode_wgmma adds the
// combine. Throws where the device is not an sm_90 one.
void launch_sparse_decode_wgmma_splits(const SparseDecodeDevice& d);

}  // namespace v41sim::kernels
