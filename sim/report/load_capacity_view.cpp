#include "sim/report/load_capacity_view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/graph/step_graph.h"
#include "sim/report/error_band_view.h"
#include "sim/report/run_view.h"
#include "sim/report/svg_lines.h"

namespace v41sim {
namespace {

const LoadPoint* point_at(const LoadCapacity& c, const std::optional<std::size_t>& index) {
  return index ? &c.points[*index] : nullptr;
}

// Rates below the largest meeting one that missed the SLA (run-to-run spread near the limit).
std::string missed_below(const LoadCapacity& c, const WorkloadSpec& w) {
  std::vector<std::string> out;
  for (std::size_t i = 0; c.largest_meeting && i < *c.largest_meeting; ++i) {
    if (!c.points[i].meets_sla) out.push_back(load_number(w, c.points[i].load));
  }
  return fmt::format("{}", fmt::join(out, ", "));
}

// The JSON key of a load: "sessions_per_s", or a closed loop's "concurrency".
const char* load_key(const WorkloadSpec& w) { return whole_loads(w) ? "concurrency" : "sessions_per_s"; }

nlohmann::json point_json(const LoadPoint& p, const WorkloadSpec& w, double min_within_sla) {
  nlohmann::json j{{load_key(w), p.load}, {"requests_per_s", p.run.result.arrival_rate_per_s}};
  j.update(served_run_json(p.run));
  j.update(sla_verdict_json(p.run, min_within_sla));
  if (p.confirmation)
    j["confirmation"] = confirmation_json(*p.confirmation, min_within_sla, p.confirmation_holds);
  return j;
}

// The first rate served again over the longer window; null where none was.
const LoadPoint* first_confirmed(const LoadCapacity& c) {
  const auto p = std::find_if(c.points.begin(), c.points.end(),
                              [](const LoadPoint& q) { return q.confirmation.has_value(); });
  return p != c.points.end() ? &*p : nullptr;
}

// The summary's cell: the largest rate that held over the longer run, that
// run's length and its price (what hours of that traffic cost, where the
// shorter window's may flatter it), "none" where every rate asked failed,
// "-" unasked.
std::string held_cell(const LoadCapacity& c, const WorkloadSpec& w) {
  if (c.largest_holding) {
    const LoadPoint& p = c.points[*c.largest_holding];
    return fmt::format("{} ({:.0f} s, {})", load_number(w, p.load), p.confirmation->result.duration_s,
                       output_token_price(*p.confirmation));
  }
  return first_confirmed(c) != nullptr ? "none" : "-";
}

// How the rates served again over the longer window went: the largest that
// held the SLA there and the smallest above it that did not ("over 1800 s it
// holds up to 0.25 sessions/s (...); not at 0.262 (97.1% within, settled)");
// empty where none was asked.
std::string holding_phrase(const LoadCapacity& c, const WorkloadSpec& w) {
  const LoadPoint* asked = first_confirmed(c);
  if (asked == nullptr) return {};
  if (!c.largest_holding) {
    return fmt::format("over {} no rate tried holds it, not even {} ({})",
                       longer_window(*asked->confirmation), load_text(w, asked->load),
                       confirmation_phrase(*asked->confirmation));
  }
  const LoadPoint& held = c.points[*c.largest_holding];
  std::string not_at;
  if (const LoadPoint* above = point_at(c, c.smallest_not_holding_above)) {
    not_at = fmt::format("; not at {} ({})", load_number(w, above->load),
                         above->confirmation ? confirmation_phrase(*above->confirmation)
                                             : "misses it over the shorter window already");
  }
  // Rates below it that did not hold: near the limit the verdict moves with the sessions drawn.
  std::vector<std::string> below;
  for (std::size_t i = 0; i < *c.largest_holding; ++i) {
    const LoadPoint& p = c.points[i];
    if (p.confirmation && !p.confirmation_holds)
      below.push_back(fmt::format("{} ({})", load_number(w, p.load), confirmation_phrase(*p.confirmation)));
  }
  if (!below.empty()) {
    not_at += fmt::format(
        "; below it {} did not hold (near the limit whether a rate holds moves with the sessions drawn)",
        fmt::join(below, ", "));
  }
  return fmt::format("over {} it holds up to {} ({}; {} per 1M output tokens){}",
                     longer_window(*held.confirmation, " of arrivals"), load_text(w, held.load),
                     confirmation_phrase(*held.confirmation), output_token_price(*held.confirmation), not_at);
}

// Whether a higher arrival rate of sessions brought fewer requests (turns);
// the points come slowest first.
bool requests_fall_as_sessions_rise(const LoadCapacity& c) {
  for (std::size_t i = 1; i < c.points.size(); ++i) {
    if (c.points[i].run.result.arrival_rate_per_s < c.points[i - 1].run.result.arrival_rate_per_s)
      return true;
  }
  return false;
}

}  // namespace

std::vector<CapacityReport> capacity_reports(const std::string& model,
                                             const std::vector<DeploymentSpec>& deployments,
                                             const WorkloadSpec& workload, const LoadOptions& options,
                                             const std::vector<LoadCapacity>& capacities) {
  std::vector<CapacityReport> reports;
  for (std::size_t i = 0; i < deployments.size(); ++i)
    reports.push_back({model, deployments[i], workload, options, capacities[i]});
  return reports;
}

std::string capacity_verdict(const CapacityReport& r) {
  const LoadCapacity& c = r.capacity;
  if (!c.not_run.empty()) return "cannot run: " + c.not_run;
  const LoadPoint* best = point_at(c, c.largest_meeting);
  const LoadPoint* over = point_at(c, c.smallest_failing_above);
  if (!best) {
    // What the lightest load missed: a limit a prompt misses alone (its own
    // prefill against TTFT) is no matter of load, which `context` shows.
    const LoadPoint& lightest = c.points.front();
    const std::string missed = misses_phrase(lightest.run);
    return fmt::format("no rate tried meets the SLA: the capacity is below {}{}",
                       load_text(r.workload, lightest.load),
                       missed.empty() ? ""
                                      : fmt::format(" (there {}; if a lighter load would not help, `context` "
                                                    "shows one prompt alone against the limits)",
                                                    missed));
  }
  std::string at = fmt::format(
      "{} ({:.2f} requests/s, {:.0f} output tokens/s per GPU, {} per 1M output tokens)",
      load_text(r.workload, best->load), best->run.result.arrival_rate_per_s,
      best->run.spread(&SeedOutcome::output_tokens_per_s_per_gpu).mean, output_token_price(best->run));
  if (best->run.seeds_unsettled() > 0) at += ", over a window whose requests in the system had not settled";
  const std::string holding = holding_phrase(c, r.workload);
  const std::string longer = holding.empty() ? "" : "; " + holding;
  if (!over) return "every rate tried meets the SLA: the capacity is above " + at + longer;
  // In a mix, which class it misses on: each class's share there, pooled over the seeds.
  std::vector<std::string> classes;
  const std::vector<double> shares = over->run.class_within_sla();
  for (std::size_t i = 0; i < shares.size() && i < r.workload.mix.size(); ++i)
    classes.push_back(fmt::format("{} {:.1f}%", r.workload.mix[i].name, 100 * shares[i]));
  const std::string by_class =
      classes.empty() ? "" : fmt::format(" ({} within their SLAs)", fmt::join(classes, ", "));
  const std::string missed = misses_phrase(over->run);
  return fmt::format("within the SLA up to {}; {} misses it{}{}{}", at, load_text(r.workload, over->load),
                     by_class, missed.empty() ? "" : ": " + missed, longer);
}

Table capacity_summary_table(const std::vector<CapacityReport>& reports) {
  Table t(fmt::format("The largest {} each serves within the SLA under '{}'",
                      whole_loads(reports.front().workload) ? "concurrency" : "rate",
                      reports.front().workload.name),
          {"deployment", "GPUs", std::string(load_unit(reports.front().workload)) + " within SLA",
           "first rate that misses", "held over a longer run", "requests/s", "tokens/s/GPU out",
           "$ per 1M output tokens"});
  for (const CapacityReport& r : reports) {
    if (!r.capacity.not_run.empty()) {
      t.add_row({r.deployment.name, std::to_string(r.deployment.total_gpus()), capacity_verdict(r), "-", "-",
                 "-", "-", "-"});
      continue;
    }
    const LoadPoint* best = point_at(r.capacity, r.capacity.largest_meeting);
    const LoadPoint* over = point_at(r.capacity, r.capacity.smallest_failing_above);
    std::string missing = over ? load_number(r.workload, over->load) : "none tried";
    if (const std::string missed = over ? misses_phrase(over->run) : ""; !missed.empty())
      missing += " (" + missed + ")";
    if (!best) {
      t.add_row({r.deployment.name, std::to_string(r.deployment.total_gpus()),
                 "below " + load_number(r.workload, r.capacity.points.front().load), missing, "-", "-", "-",
                 "-"});
      continue;
    }
    const ServingResult& x = best->run.result;
    const std::string unsettled = best->run.seeds_unsettled() > 0 ? " (not settled)" : "";
    t.add_row({r.deployment.name, std::to_string(r.deployment.total_gpus()),
               load_number(r.workload, best->load) + unsettled, missing, held_cell(r.capacity, r.workload),
               fmt::format("{:.2f}", x.arrival_rate_per_s),
               fmt::format("{:.0f}", best->run.spread(&SeedOutcome::output_tokens_per_s_per_gpu).mean),
               output_token_price(best->run)});
  }
  t.add_note(
      "each deployment's own table above gives every rate it ran, its SLA and the notes on its figures");
  t.add_note(
      "not settled: the rate met the SLA over the window while its requests in the system were still "
      "rising or moving; what the deployment sustains for hours may be less (a longer --duration tells)");
  t.add_note(
      "held over a longer run: of the rates that met the SLA, the largest that also met it, settled (a "
      "trace's replay: met it), when "
      "served again over --confirm-seconds of arrivals (the same seed and warm-up), the rates between it and "
      "the next that did not cut in three to the same precision; in brackets that run's length and $ per 1M "
      "output tokens; the deployment's own table says which did not");
  return t;
}

Table capacity_table(const CapacityReport& r) {
  const bool longest_itl = sla_limits_itl(r.deployment.sla, r.workload);
  Table t(fmt::format("{} on {} under '{}': {} served, {} first", r.model, r.deployment.name, r.workload.name,
                      whole_loads(r.workload) ? "sessions at a time" : "arrival rates",
                      whole_loads(r.workload) ? "fewest" : "slowest"),
          with_served_run_columns({load_unit(r.workload), "requests/s"}, longest_itl));
  std::vector<KernelModelUse> kernel_models;
  for (const LoadPoint& p : r.capacity.points) {
    std::vector<std::string> cells{load_number(r.workload, p.load),
                                   fmt::format("{:.2f}", p.run.result.arrival_rate_per_s)};
    for (std::string& cell :
         served_run_cells(p.run, r.options.min_within_sla, longest_itl, p.confirmation, p.confirmation_holds))
      cells.push_back(std::move(cell));
    t.add_row(std::move(cells));
    collect_kernel_models(p.run, kernel_models);
  }
  t.add_note(capacity_verdict(r));
  std::vector<std::pair<std::string, const ServedRun*>> runs;
  for (const LoadPoint& p : r.capacity.points) runs.emplace_back(load_text(r.workload, p.load), &p.run);
  if (const std::string note = unsettled_note(runs); !note.empty()) t.add_note(note);
  if (const std::string note = held_trace_rows_note(runs); !note.empty()) t.add_note(note);
  if (const LoadPoint* best = point_at(r.capacity, r.capacity.largest_meeting);
      best && !r.workload.mix.empty()) {
    t.add_note(fmt::format("by class at {} (seed {}'s run): {}", load_text(r.workload, best->load),
                           r.options.serve.seed, classes_line(best->run.result, r.workload)));
    if (const std::string pooled = pooled_latency_note(r.workload); !pooled.empty()) t.add_note(pooled);
  }
  if (requests_fall_as_sessions_rise(r.capacity)) {
    t.add_note(
        "requests/s: turns that arrived within the window; a session's next turn comes only after its last "
        "answer and think time, so where answers slow down fewer turns arrive, and requests/s can fall as "
        "sessions/s rises");
  }
  if (const std::string below = missed_below(r.capacity, r.workload); !below.empty()) {
    t.add_note("missed the SLA below that rate: " + below + " " + load_unit(r.workload) +
               "; near its limit the share within the SLA moves from run to run with the "
               "sessions drawn, so the capacity is known to about that spread (longer runs narrow it)");
  }
  t.add_note(
      fmt::format("SLA: {} for at least {:.1f}% of {}; the "
                  "workload's "
                  "{} times {}, then the bracket cut in three until its ends are within {:.0f}%{}; each rate "
                  "serves {} ({}, the same sessions drawn at every rate), then drains",
                  sla_phrase(r.deployment.sla, r.workload), 100 * r.options.min_within_sla,
                  verdict_share_phrase(r.workload), load_text(r.workload, load_of(r.workload)),
                  fmt::join(r.options.rate_factors, ", "), 100 * r.options.precision,
                  whole_loads(r.workload) ? " or next to each other (whole sessions at a time)" : "",
                  arrivals_phrase(r.options.serve, r.workload), seeds_phrase(r.options.serve)));
  t.add_note(traffic_note(r.workload));
  if (r.workload.arrival == WorkloadSpec::Arrival::kTrace) {
    t.add_note(
        "a trace's rate is its sessions over its last row's time; at another rate its rows come at their "
        "times scaled to it (sessions, turns and tokens as they are), and a run's window of arrivals ends at "
        "its last row where that comes sooner; " +
        std::string(kTraceHoldsAssumption));
  }
  if (const char* steps = aggregated_steps_assumption(r.deployment)) t.add_note(steps);
  if (const char* first = first_token_assumption(r.deployment)) t.add_note(first);
  t.add_note(itl_column_note());
  t.add_note(step_band_column_note());
  t.add_note(misses_note());
  add_served_run_notes(t, kernel_models);
  return t;
}

nlohmann::json capacity_json(const CapacityReport& r) {
  const LoadCapacity& c = r.capacity;
  if (!c.not_run.empty()) {
    return {{"model", r.model},     {"deployment", r.deployment.name}, {"deployment_file", r.deployment.file},
            {"not_run", c.not_run}, {"verdict", capacity_verdict(r)},  {"points", nlohmann::json::array()}};
  }
  nlohmann::json points = nlohmann::json::array();
  for (const LoadPoint& p : c.points) points.push_back(point_json(p, r.workload, r.options.min_within_sla));
  const auto rate_or_null = [&](const std::optional<std::size_t>& i) {
    return i ? nlohmann::json(c.points[*i].load) : nlohmann::json(nullptr);
  };
  const std::string key = load_key(r.workload);
  return {{"model", r.model},
          {"deployment", r.deployment.name},
          {"deployment_file", r.deployment.file},
          {"aggregated_steps", r.deployment.disaggregated
                                   ? nlohmann::json(nullptr)
                                   : nlohmann::json(aggregated_steps_name(r.deployment.aggregated_steps))},
          {"prefill_delay_steps", r.deployment.prefill_delay_steps},
          {"workload", r.workload.name},
          {"workload_" + key, load_of(r.workload)},
          {"warm_up_s", warm_up_of(r.options.serve, r.workload)},
          {"duration_s", r.options.serve.duration_s},
          {"seed", r.options.serve.seed},
          {"seeds", r.options.serve.seeds},
          {"min_within_sla", r.options.min_within_sla},
          {"sla", sla_json(r.deployment.sla, r.workload)},
          {"largest_meeting_" + key, rate_or_null(c.largest_meeting)},
          {"smallest_failing_" + key, rate_or_null(c.smallest_failing_above)},
          {"largest_holding_" + key, rate_or_null(c.largest_holding)},
          {"smallest_not_holding_" + key, rate_or_null(c.smallest_not_holding_above)},
          {"largest_meeting_settled",
           c.largest_meeting ? nlohmann::json(c.points[*c.largest_meeting].run.seeds_unsettled() == 0)
                             : nlohmann::json(nullptr)},
          {"verdict", capacity_verdict(r)},
          {"points", points}};
}

std::string capacity_svg(const std::vector<CapacityReport>& reports) {
  std::vector<LineSeries> series;
  double slowest = INFINITY, fastest = 0;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const CapacityReport& r = reports[i];
    if (!r.capacity.not_run.empty()) continue;  // nothing served, nothing to draw
    // In a mix whose classes have limits of their own, each class against its own, the worst drawn.
    const std::string of = has_class_slas(r.workload) ? " p99, worst class" : " p99";
    LineSeries tpot{r.deployment.name + ": TPOT" + of, {}, false, static_cast<int>(i)};
    LineSeries ttft{r.deployment.name + ": TTFT" + of, {}, true, static_cast<int>(i)};
    LineSeries itl{r.deployment.name + ": longest ITL" + of, {}, false, static_cast<int>(i), true};
    for (const LoadPoint& p : r.capacity.points) {
      slowest = std::min(slowest, p.load), fastest = std::max(fastest, p.load);
      // A rate where nothing finished has no latency to draw; without an ITL limit, no ITL line.
      const double tpot_over = p.run.spread(&SeedOutcome::tpot_p99_over_limit).mean;
      const double ttft_over = p.run.spread(&SeedOutcome::ttft_p99_over_limit).mean;
      const double itl_over = p.run.spread(&SeedOutcome::longest_itl_p99_over_limit).mean;
      if (tpot_over > 0) tpot.points.emplace_back(p.load, tpot_over);
      if (ttft_over > 0) ttft.points.emplace_back(p.load, ttft_over);
      if (itl_over > 0) itl.points.emplace_back(p.load, itl_over);
    }
    series.push_back(std::move(tpot));
    series.push_back(std::move(ttft));
    if (!itl.points.empty()) series.push_back(std::move(itl));
  }
  series.push_back({"SLA limit", {{slowest, 1.0}, {fastest, 1.0}}, false, 5});
  const CapacityReport& first = reports.front();
  return svg_lines(
      {fmt::format("{} under '{}': p99 latency over its SLA limit, by {}", first.model, first.workload.name,
                   whole_loads(first.workload) ? "sessions at a time" : "arrival rate"),
       load_unit(first.workload), "p99 / SLA limit (mean over seeds)", false},
      series);
}

}  // namespace v41sim
