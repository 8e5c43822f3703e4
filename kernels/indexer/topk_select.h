// The top-k kernels' selection (topk_cuda.cu), as plain host-and-device
// functions a CPU test replays: one CTA of 32 warps selects a row's k
// largest values, returned in index order, ties to the lower index.
//
// Radix select: over order-preserving keys (ordered_bits), four passes of
// one 8-bit digit each, most significant first; each pass counts the keys
// that match the digits chosen so far into a 256-bin histogram (a warp's
// lanes that share a bin added at once where they crowd) and one warp
// chooses the digit where the count from the top reaches what is left of k
// (the lanes' partial sums added up by shuffles, not one thread's walk). After
// the fourth pass the prefix is the k-th largest key, and `remaining` says
// how many keys equal to it the top-k takes.
//
// Selection in order: each warp owns a contiguous span of the row (a
// multiple of 32); it counts its keys above the threshold and equal to it
// with ballots; exclusive scans over the warps (one warp, a lane a warp)
// give each warp where its
// first output goes and how many ties came before it; then each warp walks
// its span again, 32 keys a step, and a lane takes its key if it is above
// the threshold or a tie within the first `ties_needed` in index order.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"

namespace v41sim::kernels::topk_select {

inline constexpr int kThreads = 1024;
inline constexpr int kLanes = 32;
inline constexpr int kWarps = kThreads / kLanes;
inline constexpr int kDigitBits = 8;
inline constexpr int kDigits = 1 << kDigitBits;

// The k-th largest key of a row, and how many keys equal to it the top-k
// takes (k minus the count strictly above it).
struct Threshold {
  uint32_t key;
  int ties_needed;
};

inline constexpr int kDigitsALane = kDigits / kLanes;

// The sum of `value` over lanes 0 to `lane`: `up(value, delta)` returns what
// lane - delta passed, or the lane's own value below it (__shfl_up_sync on
// the device), every lane making every call.
template <typename ShuffleUp>
V41_HD int sum_through_lane(int value, int lane, ShuffleUp&& up) {
  for (int delta = 1; delta < kLanes; delta *= 2) {
    const int below = up(value, delta);
    if (lane >= delta) value += below;
  }
  return value;
}

// A pass's digit, from its histogram of the keys that match `prefix`: the
// digit where the count from the top reaches `remaining`, the prefix grown
// by it, and what is left of k for the keys that share it (digit 0 where no
// bin reaches it). Chosen by a warp, so the 256 bins are not one thread's
// chain of loads: lane l sums the 8 bins from digit 255 - 8 l down, the
// lanes' sums are added up through the lanes, and the one lane whose bins
// hold the crossing (the last lane, holding digit 0, where none does) walks
// them from the top. Returns true in that lane alone, its choice in
// `chosen`; every lane must make the call.
template <typename ShuffleUp>
V41_HD bool choose_digit_by_lane(const int* histogram, uint32_t prefix, int remaining, int shift, int lane,
                                 ShuffleUp&& up, Threshold& chosen) {
  const int top = kDigits - 1 - lane * kDigitsALane;
  const int lowest = top - (kDigitsALane - 1);
  int own = 0;
  V41_UNROLL
  for (int i = 0; i < kDigitsALane; ++i) own += histogram[top - i];
  const int through = sum_through_lane(own, lane, up);
  int above = through - own;
  if (above >= remaining || (through < remaining && lowest > 0)) return false;
  int digit = top;
  for (; digit > lowest && above + histogram[digit] < remaining; --digit) above += histogram[digit];
  chosen = {prefix | (static_cast<uint32_t>(digit) << shift), remaining - above};
  return true;
}

// The bin of a key in the pass at `shift`, where it matches the digits chosen so far (-1 where not).
V41_HD int digit_bin(uint32_t key, uint32_t prefix, uint32_t mask, int shift) {
  return (key & mask) == prefix ? static_cast<int>((key >> shift) & (kDigits - 1)) : -1;
}

// One warp step of a pass's histogram: each lane with a bin (>= 0) counts
// its key there, through `add(bin, count)` (a shared-memory atomicAdd on the
// device), the lanes that share a bin in one add by the lowest of them. Not
// an atomic a lane, because a pass's first digit is a key's sign and top 7
// exponent bits: values within a factor of 4 of each other share a bin, and
// an indexer row's logits (sums over 32 heads of ReLU'd scores) span a few
// such factors, so a warp's 32 lanes add to a few shared-memory words, and
// the hardware serializes the updates to one word. `match(value)` returns
// the lanes that passed the same value (__match_any_sync on the device, as
// CUB's radix ranking finds a digit's lanes); every lane makes the call.
template <typename Match, typename Add>
V41_HD void count_bin_by_warp(int bin, int lane, Match&& match, Add&& add) {
  const uint32_t sharing = match(bin);
  if (bin >= 0 && lane == lowest_bit(sharing)) add(bin, bit_count(sharing));
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

// The warps' counts' exclusive scan by one warp (kWarps lanes): lane w
// holds warp w's count and gets the counts of the warps before it.
static_assert(kWarps == kLanes, "one lane a warp");
template <typename ShuffleUp>
V41_HD int count_before_warp(int count, int warp, ShuffleUp&& up) {
  return sum_through_lane(count, warp, up) - count;
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
