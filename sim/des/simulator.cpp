#include "sim/des/simulator.h"

#include <algorithm>
#include <stdexcept>

namespace v41sim {
namespace {

// FNV-1a: a stable hash of the stream name (std::hash may differ between builds).
uint64_t stable_hash(std::string_view text) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

// The queue is a 4-ary min-heap on (time, key): half the levels of a binary
// heap, and a node's children share a cache line (4 x 16 bytes), so a pop
// touches fewer lines. Events leave it in (time, scheduling order) order.
constexpr std::size_t kArity = 4;

template <typename Entry, typename Later>
void sift_up(std::vector<Entry>& heap, std::size_t i, Later later) {
  const Entry moving = heap[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / kArity;
    if (!later(heap[parent], moving)) break;
    heap[i] = heap[parent];
    i = parent;
  }
  heap[i] = moving;
}

template <typename Entry, typename Later>
void sift_down(std::vector<Entry>& heap, std::size_t i, Later later) {
  const std::size_t n = heap.size();
  const Entry moving = heap[i];
  while (true) {
    const std::size_t first = i * kArity + 1;
    if (first >= n) break;
    std::size_t best = first;
    const std::size_t end = std::min(first + kArity, n);
    for (std::size_t c = first + 1; c < end; ++c) {
      if (later(heap[best], heap[c])) best = c;
    }
    if (!later(moving, heap[best])) break;
    heap[i] = heap[best];
    i = best;
  }
  heap[i] = moving;
}

}  // namespace

EventId Simulator::schedule_at(SimTime when, EventAction action) {
  if (when < now_) throw std::logic_error("Simulator: event scheduled in the past");
  std::size_t slot;
  if (free_slots_.empty()) {
    slot = actions_.size();
    actions_.push_back(std::move(action));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    actions_[slot] = std::move(action);
  }
  if (slot > kSlotMask) throw std::length_error("Simulator: more than 16.7M events pending");
  if (next_id_ >> (64 - kSlotBits) != 0) throw std::length_error("Simulator: event ids exhausted");
  const EventId id = next_id_++;
  heap_.push_back({when, (id << kSlotBits) | slot});
  sift_up(heap_, heap_.size() - 1, Later{});
  return id;
}

void Simulator::cancel(EventId id) {
  cancelled_.insert(std::lower_bound(cancelled_.begin(), cancelled_.end(), id), id);
}

void Simulator::run_until(SimTime until) {
  while (!heap_.empty() && heap_.front().when <= until) {
    const Entry entry = heap_.front();
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(heap_, 0, Later{});
    EventAction action = std::move(actions_[entry.action()]);
    free_slots_.push_back(entry.action());
    if (!cancelled_.empty()) {
      const auto it = std::lower_bound(cancelled_.begin(), cancelled_.end(), entry.id());
      if (it != cancelled_.end() && *it == entry.id()) {
        cancelled_.erase(it);
        continue;
      }
    }
    now_ = entry.when;
    ++processed_;
    action();
  }
  if (until != SimTime::max()) now_ = std::max(now_, until);
}

std::mt19937_64 Simulator::random_stream(std::string_view stream) const {
  std::seed_seq seq{static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32),
                    static_cast<uint32_t>(stable_hash(stream)),
                    static_cast<uint32_t>(stable_hash(stream) >> 32)};
  return std::mt19937_64(seq);
}

}  // namespace v41sim
