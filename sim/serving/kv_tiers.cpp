#include "sim/serving/kv_tiers.h"

#include <algorithm>

namespace v41sim {

SessionKvTiers::SessionKvTiers(double retention_s, double host_ttl_s, int64_t host_pool_sessions)
    : retention_(SimTime::from_s(retention_s)),
      host_ttl_(SimTime::from_s(host_ttl_s)),
      host_pool_sessions_(host_pool_sessions) {}

TierLookup SessionKvTiers::lookup(int64_t session, int64_t prefix_tokens, SimTime now) {
  TierLookup result;
  if (prefix_tokens == 0) return result;
  const auto it = sessions_.find(session);
  if (it == sessions_.end() || now - it->second.stored > retention_) {
    ++counters_.global_misses;
    ++counters_.swa_misses;
    return result;
  }
  ++counters_.global_hits;
  result.cached_tokens = std::min(prefix_tokens, it->second.context_tokens);
  result.swa_hit = it->second.swa_parked && now - it->second.stored <= host_ttl_;
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
  Entry& e = sessions_[session];
  if (e.swa_parked) lru_.erase(e.lru);
  e.context_tokens = context_tokens;
  e.stored = stored;
  e.swa_parked = park;
  if (!park) return;
  lru_.push_back(session);
  e.lru = std::prev(lru_.end());
  while (static_cast<int64_t>(lru_.size()) > host_pool_sessions_) {
    sessions_[lru_.front()].swa_parked = false;
    lru_.pop_front();
    ++counters_.swa_evictions;
  }
}

void SessionKvTiers::forget(int64_t session) {
  const auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  if (it->second.swa_parked) lru_.erase(it->second.lru);
  sessions_.erase(it);
}

}  // namespace v41sim
