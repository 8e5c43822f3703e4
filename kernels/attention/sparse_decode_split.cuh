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

// A slot's key for the tensor-core kernels: its kind and entry (none past
// the split's end).
struct KeyEntry {
  KeyKind kind;
  const uint8_t* entry;
};
__device__ inline KeyEntry find_key(const SparseDecodeDevice& d, int64_t b, int64_t slot, int64_t end) {
  if (slot >= end) return {KeyKind::kNone, nullptr};
  bool is_main = false;
  const uint8_t* entry = key_entry(d, b, slot, &is_main);
  if (entry == nullptr) return {KeyKind::kNone, nullptr};
  return {is_main ? KeyKind::kMain : KeyKind::kWindow, entry};
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
