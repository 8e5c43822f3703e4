// SessionKvTiers: what a returning session finds when its next turn arrives.
//
// Global KV (890 B/token for V4.1) persists in an SSD tier for `retention_s`;
// a hit is read back at the tier's bandwidth. The SWA state is not persisted:
// it sits in a host-DRAM pool (a fraction of every node's DRAM) for
// `host_ttl_s`, least recently used first out when the pool is full. A hit on
// global KV with the SWA state gone costs a bounded replay of the window.
//
// A block-hashed trace (WorkloadSpec::TraceRow::blocks) keys the tiers by
// block instead of by session: a prompt finds the run of its leading blocks
// still held, and the window state where that run ends at the last block of
// a prompt stored before (the state an engine parks is at a prompt's end).
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "sim/des/sim_time.h"

namespace v41sim {

struct KvTierCounters {
  int64_t global_hits = 0;
  int64_t global_misses = 0;
  int64_t swa_hits = 0;
  int64_t swa_misses = 0;
  int64_t swa_evictions = 0;
};
// What happened between two readings of the counters.
KvTierCounters operator-(const KvTierCounters& later, const KvTierCounters& earlier);

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

  // A prompt of `prompt_tokens` named by its blocks of `block_tokens`: its
  // leading blocks held and not expired, as tokens (at most all but its last
  // token, which must run to sample), and whether the window state at their end is parked.
  TierLookup lookup_blocks(const std::vector<int64_t>& blocks, int64_t block_tokens, int64_t prompt_tokens,
                           SimTime now);
  // A prompt prefilled: each of its blocks persisted (again) now; the window
  // state at its last block parked.
  void store_blocks(const std::vector<int64_t>& blocks, int64_t block_tokens, SimTime now);

  const KvTierCounters& counters() const { return counters_; }
  int64_t host_pool_sessions_used() const { return static_cast<int64_t>(lru_.size()); }
  int64_t host_pool_sessions_capacity() const { return host_pool_sessions_; }

 private:
  struct Entry {
    int64_t context_tokens = 0;
    SimTime stored;  // global KV persisted (again) then
    bool swa_parked = false;
    SimTime parked;  // the window state parked then
    std::list<int64_t>::iterator lru;
  };
  SimTime retention_;
  SimTime host_ttl_;
  int64_t host_pool_sessions_;
  // Persists a context stored at `stored`; its window state joins the host
  // pool (newest, evicting the oldest past its size) where `park`.
  void put(int64_t session, int64_t context_tokens, SimTime stored, bool park);

  bool held(const Entry& e, SimTime now) const { return now - e.stored <= retention_; }

  std::unordered_map<int64_t, Entry> entries_;  // by session, or by block in a block-hashed trace
  std::list<int64_t> lru_;                      // entries whose SWA state is parked, oldest first
  KvTierCounters counters_;
};

}  // namespace v41sim
