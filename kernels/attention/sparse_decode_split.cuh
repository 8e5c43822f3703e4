// What both sparse-decode kernels (FP32 baseline and tensor-core) share: the
// key list of a request (its top-k compressed entries, then its window), the
// layout of a split's partial result, and the kernel that merges the splits
// with the attention sink by log-sum-exp weights.
#pragma once

#include <cuda_runtime.h>

#include "kernels/attention/sparse_decode_cuda.h"

namespace v41sim::kernels {

// Slot `slot` of request b's key list: its entry, or null (padding, or past the window's fill).
__device__ inline const uint8_t* key_entry(const SparseDecodeDevice& d, int64_t b, int64_t slot,
                                           bool* is_main) {
  if (slot < d.shape.topk) {
    const int32_t index = d.topk[b * d.shape.topk + slot];
    *is_main = true;
    return index < 0 ? nullptr : d.main_kv + static_cast<int64_t>(index) * kMainEntryBytes;
  }
  const int64_t w = slot - d.shape.topk;
  *is_main = false;
  return w < d.window_len[b] ? d.window + (b * kWindowTokens + w) * kWindowEntryBytes : nullptr;
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

// Partial result of (request, split, head): 512 unnormalised outputs, then the running max and sum.
__device__ inline float* partial_of(const SparseDecodeDevice& d, int64_t b, int split, int64_t head) {
  return d.workspace + ((b * d.splits + split) * d.shape.heads + head) * (kLatentDim + 2);
}

// What turns one split's unnormalised output into the attention output, where
// the split is the whole key list: with its largest logit m and its sum l of
// exp(s - m), the sink joining the softmax's denominator (the combine's
// arithmetic for a single split; 0 where no key was valid, m = -inf).
__device__ inline float whole_list_factor(float sink, float m, float l) {
  const float max_all = fmaxf(sink, m);
  const float weight = __expf(m - max_all);
  return weight / (__expf(sink - max_all) + weight * l);
}

// Merges the splits and the sink (sparse_decode_cuda.cu); the launchers call
// it where a request's keys were split.
void launch_sparse_decode_combine(const SparseDecodeDevice& d);

// The wgmma kernel's splits alone (sparse_decode_wgmma_cuda.cu, built for
// sm_90a in a library of its own); launch_sparse_decode_wgmma adds the
// combine. Throws where the device is not an sm_90 one.
void launch_sparse_decode_wgmma_splits(const SparseDecodeDevice& d);

}  // namespace v41sim::kernels
