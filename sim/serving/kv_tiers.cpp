#include "sim/serving/kv_tiers.h"

#include <algorithm>

namespace v41sim {

KvTierCounters operator-(const KvTierCounters& later, const KvTierCounters& earlier) {
  return {later.global_hits - earlier.global_hits, later.global_misses - earlier.global_misses,
          later.swa_hits - earlier.swa_hits, later.swa_misses - earlier.swa_misses,
          later.swa_evictions - earlier.swa_evictions};
}

SessionKvTiers::SessionKvTiers(double retention_s, double host_ttl_s, int64_t host_pool_sessions)
    : retention_(SimTime::from_s(retention_s)),
      host_ttl_(SimTime::from_s(host_ttl_s)),
      host_pool_sessions_(host_pool_sessions) {}

TierLookup SessionKvTiers::lookup(int64_t session, int64_t prefix_tokens, SimTime now) {
  TierLookup result;
  if (prefix_tokens == 0) return result;
  const auto it = entries_.find(session);
  if (it == entries_.end() || !held(it->second, now)) {
    ++counters_.global_misses;
    ++counters_.swa_misses;
    return result;
  }
  ++counters_.global_hits;
  result.cached_tokens = std::min(prefix_tokens, it->second.context_tokens);
  result.swa_hit = it->second.swa_parked && now - it->second.parked <= host_ttl_;
  ++(result.swa_hit ? counters_.swa_hits : counters_.swa_misses);
  return result;
}

void SessionKvTiers::store(int64_t session, int64_t context_tokens, SimTime now) {
  put(session, context_tokens, now, host_pool_sessions_ > 0);
}

void SessionKvTiers::store_earlier(int64_t session, int64_t context_tokens, SimTime stored, SimTime now) {
  put(session, context_tokens, stored, host_pool_sessions_ > 0 && now - stored <= host_ttl_);
}

void SessionKvTiers::put(int64_t session, int64_t context_tokens, SimTime stored, bool park) {
  Entry& e = entries_[session];
  if (e.swa_parked) lru_.erase(e.lru);
  e.context_tokens = context_tokens;
  e.stored = stored;
  e.swa_parked = park;
  if (!park) return;
  e.parked = stored;
  lru_.push_back(session);
  e.lru = std::prev(lru_.end());
  while (static_cast<int64_t>(lru_.size()) > host_pool_sessions_) {
    entries_[lru_.front()].swa_parked = false;
    lru_.pop_front();
    ++counters_.swa_evictions;
  }
}

TierLookup SessionKvTiers::lookup_blocks(const std::vector<int64_t>& blocks, int64_t block_tokens,
                                         int64_t prompt_tokens, SimTime now) {
  TierLookup result;
  const Entry* last = nullptr;
  for (const int64_t block : blocks) {
    const auto it = entries_.find(block);
    if (it == entries_.end() || !held(it->second, now)) break;
    last = &it->second;
    result.cached_tokens += block_tokens;
  }
  if (last == nullptr) {
    ++counters_.global_misses;
    ++counters_.swa_misses;
    return result;
  }
  ++counters_.global_hits;
  result.cached_tokens = std::min(result.cached_tokens, prompt_tokens - 1);
  result.swa_hit = last->swa_parked && now - last->parked <= host_ttl_;
  ++(result.swa_hit ? counters_.swa_hits : counters_.swa_misses);
  return result;
}

void SessionKvTiers::store_blocks(const std::vector<int64_t>& blocks, int64_t block_tokens, SimTime now) {
  if (blocks.empty()) return;
  // A block inside the prompt is persisted again; a window state another
  // prompt parked at its end stays as it was. The prompt's end parks its own.
  for (std::size_t i = 0; i + 1 < blocks.size(); ++i) {
    Entry& e = entries_[blocks[i]];
    e.context_tokens = block_tokens;
    e.stored = now;
  }
  put(blocks.back(), block_tokens, now, host_pool_sessions_ > 0);
}

void SessionKvTiers::forget(int64_t session) {
  const auto it = entries_.find(session);
  if (it == entries_.end()) return;
  if (it->second.swa_parked) lru_.erase(it->second.lru);
  entries_.erase(it);
}

}  // namespace v41sim
