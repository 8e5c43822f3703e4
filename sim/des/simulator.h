// Simulator: the discrete-event core. No model knowledge lives here.
//
// Contract:
//  - events run in (time, scheduling order) order: two events at the same
//    time run in the order they were scheduled, so runs are repeatable;
//  - time never goes backwards: scheduling in the past throws;
//  - cancel(id) marks an event; it is skipped when it reaches the head;
//  - random numbers come from named streams seeded from the run seed, so
//    adding a stream does not shift the numbers of another.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string_view>
#include <vector>

#include "sim/des/sim_time.h"

namespace v41sim {

using EventId = uint64_t;
using EventAction = std::function<void()>;

class Simulator {
 public:
  explicit Simulator(uint64_t seed) : seed_(seed) {}

  EventId schedule_at(SimTime when, EventAction action);
  EventId schedule_after(SimTime delay, EventAction action) {
    return schedule_at(now_ + delay, std::move(action));
  }
  void cancel(EventId id);

  // Runs events up to and including `until`; the clock then stands at `until`
  // (or at the last event when the queue ran dry earlier).
  void run_until(SimTime until);
  SimTime now() const { return now_; }
  uint64_t events_processed() const { return processed_; }
  std::size_t pending() const { return heap_.size(); }

  // An independent generator for `stream`; the same (seed, stream) gives the same numbers.
  std::mt19937_64 random_stream(std::string_view stream) const;

 private:
  // 16 bytes, so the heap stays small in cache: the event id (scheduling
  // order) in the high bits of `key`, its action's slot in the low bits, so
  // comparing keys compares ids.
  static constexpr int kSlotBits = 24;  // up to 16.7M pending events
  static constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;
  struct Entry {
    SimTime when;
    uint64_t key;
    EventId id() const { return key >> kSlotBits; }
    std::size_t action() const { return static_cast<std::size_t>(key & kSlotMask); }
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.when != b.when ? a.when > b.when : a.key > b.key;
    }
  };

  uint64_t seed_;
  SimTime now_;
  EventId next_id_ = 0;
  uint64_t processed_ = 0;
  std::vector<Entry> heap_;
  std::vector<EventAction> actions_;  // slots reused through free_slots_
  std::vector<std::size_t> free_slots_;
  std::vector<EventId> cancelled_;  // sorted ids awaiting removal
};

}  // namespace v41sim
