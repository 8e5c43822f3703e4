#include "sim/graph/expert_load.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

namespace v41sim {

double ep_load_imbalance(int64_t experts, int64_t ep, double skew, int64_t redundant) {
  if (ep <= 1 || experts <= 0) return 1.0;
  std::vector<double> items;  // one per expert replica, heaviest first
  for (int64_t i = 0; i < experts; ++i) {
    const double popularity = 1.0 / std::pow(static_cast<double>(i + 1), skew);
    const int replicas = i < redundant ? 2 : 1;
    for (int r = 0; r < replicas; ++r) items.push_back(popularity / replicas);
  }
  std::sort(items.begin(), items.end(), std::greater<>());
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

}  // namespace v41sim
