#include "sim/graph/expert_load.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <numeric>
#include <queue>
#include <tuple>
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

// Expected largest of `n` independent standard normal draws:
// the integral of z n phi(z) Phi(z)^(n-1), by Simpson's rule where the
// integrand lives. Memoised per n and thread (a step's graph asks it per MoE
// layer; no lock on that path, the same figure on every thread).
double expected_max_standard_normal(int64_t n) {
  thread_local std::map<int64_t, double> known;
  const auto [it, added] = known.try_emplace(n, 0.0);
  if (!added) return it->second;
  constexpr double kFrom = -8, kTo = 9;
  constexpr int kSteps = 680;  // even, for Simpson's rule
  constexpr double kH = (kTo - kFrom) / kSteps;
  const double count = static_cast<double>(n);
  double sum = 0;
  for (int i = 0; i <= kSteps; ++i) {
    const double z = kFrom + i * kH;
    const double phi = std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi);
    const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
    const double f = z * count * phi * std::pow(cdf, count - 1);
    sum += f * (i == 0 || i == kSteps ? 1 : (i % 2 == 1 ? 4 : 2));
  }
  it->second = sum * kH / 3;
  return it->second;
}

// Expected largest of `n` independent Binomial(trials, p) draws: the sum
// over x of P(largest > x) = 1 - F(x)^n. Where the spread is wide the
// normal law stands in (its error is a fraction of one, against a spread
// of more than a dozen).
double expected_max_binomial(double trials, double p, int64_t n) {
  if (trials <= 0 || p <= 0) return 0;
  if (p >= 1 || n <= 1) return trials * std::min(p, 1.0);
  const double mean = trials * p;
  const double sd = std::sqrt(mean * (1 - p));
  constexpr double kNormalFromSd = 12;
  if (sd > kNormalFromSd) return mean + sd * expected_max_standard_normal(n);
  const double count = static_cast<double>(n);
  // F(x)^n below `all_below` counts as 0 (the term as 1); above `all_above`, as 1.
  const double all_below = std::exp(std::log(1e-15) / count);
  const double all_above = std::exp(std::log1p(-1e-15) / count);
  const double lo = std::max(0.0, std::floor(mean - 12 * sd - 2));
  const double hi = std::min(trials, std::ceil(mean + 12 * sd + 12));
  double pmf = std::exp(std::lgamma(trials + 1) - std::lgamma(lo + 1) - std::lgamma(trials - lo + 1) +
                        lo * std::log(p) + (trials - lo) * std::log1p(-p));
  double cdf = 0;  // what lies below lo is negligible
  double expected = lo;
  for (double x = lo; x < hi; ++x) {
    cdf += pmf;
    if (cdf > all_above) break;
    expected += cdf < all_below ? 1.0 : 1.0 - std::pow(cdf, count);
    pmf *= (trials - x) / (x + 1) * p / (1 - p);
  }
  return expected;
}

// A slot is reached unless each token picks its top_k elsewhere.
double reach_chance(double tokens, double top_k, double slots) {
  return 1.0 - std::pow(1.0 - top_k / slots, tokens);
}

}  // namespace

BusiestRank average_rank(double tokens, double top_k, double slots, int64_t ep) {
  if (!(tokens > 0) || !(slots > 0) || ep < 1) return {};
  return {1.0, slots / static_cast<double>(ep) * reach_chance(tokens, top_k, slots)};
}

BusiestRank busiest_rank(double tokens, double top_k, double slots, int64_t ep) {
  BusiestRank out;
  if (!(tokens > 0) || !(slots > 0) || ep < 1) return out;
  // Memoised per thread on the exact arguments: every MoE layer kind of every
  // step graph asks it, for a few thousand distinct token counts in a run
  // (no lock on that path; the same figure on every thread).
  thread_local absl::flat_hash_map<std::tuple<double, double, double, int64_t>, BusiestRank> known;
  const auto [it, added] = known.try_emplace(std::tuple{tokens, top_k, slots, ep});
  if (!added) return it->second;
  const double copies = std::round(tokens * top_k);
  const double local = std::round(slots / static_cast<double>(ep));
  out.experts_reached = expected_max_binomial(local, reach_chance(tokens, top_k, slots), ep);
  if (ep > 1 && copies > 0)
    out.rows_over_mean =
        expected_max_binomial(copies, 1.0 / static_cast<double>(ep), ep) / (copies / static_cast<double>(ep));
  it->second = out;
  return out;
}

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
