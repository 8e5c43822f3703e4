// The top-k kernels' selection (topk_cuda.cu), as plain host-and-device
// functions a CPU test replays: one CTA of 32 warps selects a row's k
// largest values, returned in index order, ties to the lower index.
//
// Radix select: over order-preserving keys (ordered_bits), four passes of
// one 8-bit digit each, most significant first; each pass counts the keys
// that match the digits chosen so far into a 256-bin histogram and chooses
// the digit where the count from the top reaches what is left of k. After
// the fourth pass the prefix is the k-th largest key, and `remaining` says
// how many keys equal to it the top-k takes.
//
// Selection in order: each warp owns a contiguous span of the row (a
// multiple of 32); it counts its keys above the threshold and equal to it
// with ballots; exclusive scans over the warps give each warp where its
// first output goes and how many ties came before it; then each warp walks
// its span again, 32 keys a step, and a lane takes its key if it is above
// the threshold or a tie within the first `ties_needed` in index order.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"

namespace v41sim::kernels::topk_select {

inline constexpr int kThreads = 1024;
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kDigitBits = 8;
inline constexpr int kDigits = 1 << kDigitBits;

// The k-th largest key of a row, and how many keys equal to it the top-k
// takes (k minus the count strictly above it).
struct Threshold {
  uint32_t key;
  int ties_needed;
};

// A pass's digit, from its histogram of the keys that match `prefix`: the
// digit where the count from the top reaches `remaining`, the prefix grown
// by it, and what is left of k for the keys that share it.
V41_HD Threshold choose_digit(const int* histogram, uint32_t prefix, int remaining, int shift) {
  int above = 0;
  int digit = kDigits - 1;
  for (; digit > 0 && above + histogram[digit] < remaining; --digit) above += histogram[digit];
  return {prefix | (static_cast<uint32_t>(digit) << shift), remaining - above};
}

// The bin of a key in the pass at `shift`, where it matches the digits chosen so far (-1 where not).
V41_HD int digit_bin(uint32_t key, uint32_t prefix, uint32_t mask, int shift) {
  return (key & mask) == prefix ? static_cast<int>((key >> shift) & (kDigits - 1)) : -1;
}

// The contiguous span of a row's `length` keys warp `warp` owns: a multiple
// of 32, the last ones short or empty.
struct Span {
  int64_t begin;
  int64_t end;
};
V41_HD Span warp_span(int warp, int64_t length) {
  const int64_t span = ((length + kWarps - 1) / kWarps + 31) / 32 * 32;
  const int64_t begin = warp * span;
  return {begin, begin + span < length ? begin + span : length};
}

// Where a warp's first selected key goes: the keys above the threshold in
// the warps before it, and as many of their ties as the top-k takes.
V41_HD int first_output(int above_before, int ties_before, const Threshold& t) {
  return above_before + (ties_before < t.ties_needed ? ties_before : t.ties_needed);
}

// Whether a lane takes its key: above the threshold, or a tie with fewer
// than `ties_needed` ties before it in index order.
V41_HD bool lane_takes(bool in_span, uint32_t key, const Threshold& t, int ties_before) {
  return in_span && (key > t.key || (key == t.key && ties_before < t.ties_needed));
}

// The lanes below `lane` in a ballot: those whose keys come first.
V41_HD unsigned lanes_below(int lane) { return (1u << lane) - 1u; }

}  // namespace v41sim::kernels::topk_select
