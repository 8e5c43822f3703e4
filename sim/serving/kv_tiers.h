// SessionKvTiers: what a returning session finds when its next turn arrives.
//
// Global KV (890 B/token for V4.1) persists in an SSD tier for `retention_s`;
// a hit is read back at the tier's bandwidth. The SWA state is not persisted:
// it sits in a host-DRAM pool (a fraction of every node's DRAM) for
// `host_ttl_s`, least recently used first out when the pool is full. A hit on
// global KV with the SWA state gone costs a bounded replay of the window.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>

#include "sim/des/sim_time.h"

namespace v41sim {

struct KvTierCounters {
  int64_t global_hits = 0;
  int64_t global_misses = 0;
  int64_t swa_hits = 0;
  int64_t swa_misses = 0;
  int64_t swa_evictions = 0;
};

struct TierLookup {
  int64_t cached_tokens = 0;  // prefix tokens whose global KV is still held
  bool swa_hit = false;       // the window state is still in the host pool
};

class SessionKvTiers {
 public:
  SessionKvTiers(double retention_s, double host_ttl_s, int64_t host_pool_sessions);

  TierLookup lookup(int64_t session, int64_t prefix_tokens, SimTime now);
  // A turn finished: its context is persisted and its window state parked.
  void store(int64_t session, int64_t context_tokens, SimTime now);
  // A resumed session's earlier life ended at `stored` (before `now`, even
  // before the run): its global KV was persisted then; its window state is
  // parked only while the host pool's TTL still covers the gap.
  void store_earlier(int64_t session, int64_t context_tokens, SimTime stored, SimTime now);
  void forget(int64_t session);

  const KvTierCounters& counters() const { return counters_; }
  int64_t host_pool_sessions_used() const { return static_cast<int64_t>(lru_.size()); }
  int64_t host_pool_sessions_capacity() const { return host_pool_sessions_; }

 private:
  struct Entry {
    int64_t context_tokens = 0;
    SimTime stored;
    bool swa_parked = false;
    std::list<int64_t>::iterator lru;
  };
  SimTime retention_;
  SimTime host_ttl_;
  int64_t host_pool_sessions_;
  // Persists a context stored at `stored`; its window state joins the host
  // pool (newest, evicting the oldest past its size) where `park`.
  void put(int64_t session, int64_t context_tokens, SimTime stored, bool park);

  std::unordered_map<int64_t, Entry> sessions_;
  std::list<int64_t> lru_;  // sessions whose SWA state is parked, oldest first
  KvTierCounters counters_;
};

}  // namespace v41sim
