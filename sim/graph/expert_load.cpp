#include "sim/graph/expert_load.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <queue>
#include <utility>
#include <vector>

namespace v41sim {
namespace {

// EPLB's replication: each redundant slot goes to the expert whose load per
// replica is the largest then (the lower index on a tie), so a hot expert
// gets as many replicas as its load asks. Returns each expert's replicas.
std::vector<int64_t> replicas_by_load(const std::vector<double>& popularity, int64_t redundant) {
  std::vector<int64_t> replicas(popularity.size(), 1);
  using Entry = std::pair<double, int64_t>;  // load per replica, expert
  auto later = [](const Entry& a, const Entry& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(later)> heaviest(later);
  for (std::size_t i = 0; i < popularity.size(); ++i) heaviest.push({popularity[i], static_cast<int64_t>(i)});
  for (int64_t slot = 0; slot < redundant; ++slot) {
    const auto [load, expert] = heaviest.top();
    heaviest.pop();
    const auto e = static_cast<std::size_t>(expert);
    ++replicas[e];
    heaviest.push({popularity[e] / static_cast<double>(replicas[e]), expert});
  }
  return replicas;
}

}  // namespace

double ep_load_imbalance(int64_t experts, int64_t ep, double skew, int64_t redundant) {
  if (ep <= 1 || experts <= 0) return 1.0;
  std::vector<double> popularity;
  for (int64_t i = 0; i < experts; ++i)
    popularity.push_back(1.0 / std::pow(static_cast<double>(i + 1), skew));
  const std::vector<int64_t> replicas = replicas_by_load(popularity, redundant);
  std::vector<double> items;  // one per expert replica, heaviest first
  for (std::size_t i = 0; i < popularity.size(); ++i) {
    for (int64_t r = 0; r < replicas[i]; ++r)
      items.push_back(popularity[i] / static_cast<double>(replicas[i]));
  }
  std::sort(items.begin(), items.end(), std::greater<>());
  // EPLB's packing: heaviest replica first, onto the least-loaded rank that
  // still has a free slot.
  const auto slots =
      static_cast<int64_t>((items.size() + static_cast<std::size_t>(ep) - 1) / static_cast<std::size_t>(ep));
  std::vector<double> load(static_cast<std::size_t>(ep), 0.0);
  std::vector<int64_t> used(static_cast<std::size_t>(ep), 0);
  for (double item : items) {
    std::size_t best = load.size();
    for (std::size_t r = 0; r < load.size(); ++r) {
      if (used[r] < slots && (best == load.size() || load[r] < load[best])) best = r;
    }
    load[best] += item;
    ++used[best];
  }
  const double total = std::accumulate(load.begin(), load.end(), 0.0);
  return *std::max_element(load.begin(), load.end()) / (total / static_cast<double>(ep));
}

double ep_load_imbalance(const ModelSpec& model, int64_t ep, double skew, int64_t redundant) {
  return ep_load_imbalance(model.moe ? model.moe->routed_experts : 0, ep, skew, redundant);
}

}  // namespace v41sim
