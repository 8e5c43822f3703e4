// Confirmation: a run that met the SLA over a short window served again over
// a longer one (plan's and capacity's --confirm-seconds). Near its limit a
// deployment can meet the SLA for minutes while its queue creeps; the longer
// run says whether it holds (ServedRun::holds_sla). A candidate is anything
// with the two fields below (PlanRow, LoadPoint).
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "sim/common/parallel_for.h"
#include "sim/costing/served_run.h"

namespace v41sim {

// Assumed: the longer window's default, 1,800 s of arrivals after the
// warm-up. Near its capacity one 8 x H200 instance under agent_coding meets
// the SLA over 200 s at rates whose requests in the system keep climbing for
// the next hour; half an hour shows that climb (README: capacity).
inline constexpr double kDefaultConfirmS = 1800;

// The longer run's options: the same seeds and warm-up, drained, over
// `confirm_s` of arrivals; none where that is no longer than the run's own
// window (it would tell nothing new).
inline std::optional<ServeOptions> confirmation_window(const ServeOptions& run, double confirm_s) {
  if (!(confirm_s > run.duration_s)) return std::nullopt;
  ServeOptions longer = run;
  longer.drain = true;
  longer.duration_s = confirm_s;
  return longer;
}

// Records `longer`, the candidate served again, and whether the SLA held over it.
template <typename Candidate>
void confirm(Candidate& candidate, double min_within_sla, ServedRun longer) {
  candidate.confirmation = std::move(longer);
  candidate.confirmation_holds = candidate.confirmation->holds_sla(min_within_sla);
}

// The candidate served again by `serve_again` and confirmed. A run whose
// window a trace's last row or a benchmark's last prompt ended served
// everything a longer one would: it stands as its own confirmation, not served again.
template <typename Candidate>
void confirm_served_again(Candidate& candidate, double min_within_sla,
                          const std::function<ServedRun(const Candidate&)>& serve_again) {
  const ServedRun& run = candidate.run;
  confirm(candidate, min_within_sla, run.result.window_ends_with_traffic() ? run : serve_again(candidate));
}

// Serves `candidates` again with `serve_again` in their order, two at a time
// (both cores busy where a walk one by one would leave one idle; a fixed
// schedule, so which are asked does not depend on the cores), until one holds
// the SLA. Returns the position of the first that held; a pair's second is
// asked (and recorded) even where its first holds, later ones are not.
template <typename Candidate>
std::optional<std::size_t> confirm_two_at_a_time(
    const std::vector<Candidate*>& candidates, double min_within_sla,
    const std::function<ServedRun(const Candidate&)>& serve_again) {
  for (std::size_t from = 0; from < candidates.size(); from += 2) {
    const std::size_t n = std::min<std::size_t>(2, candidates.size() - from);
    parallel_for(n, [&](std::size_t i) {
      Candidate& c = *candidates[from + i];
      confirm_served_again(c, min_within_sla, serve_again);
    });
    for (std::size_t i = from; i < from + n; ++i) {
      if (candidates[i]->confirmation_holds) return i;
    }
  }
  return std::nullopt;
}

}  // namespace v41sim
