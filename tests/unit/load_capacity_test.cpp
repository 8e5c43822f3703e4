// capacity: the largest arrival rate a deployment serves within its SLA,
// bracketed by runs on either side and cut down to the precision asked.
#include "sim/costing/load_capacity.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <tuple>
#include <vector>

#include "sim/common/input_error.h"
#include "sim/report/load_capacity_view.h"
#include "tests/test_data.h"

namespace v41sim {
namespace {

std::string data(const std::string& file) { return std::string(V41SIM_SOURCE_DIR) + "/" + file; }

// One prefill GPU serving single-turn 2048-token prompts (an M/D/1 queue at
// the prefill GPU) on the tiny GQA model: quick, and its limit is known.
struct Queue {
  Catalog catalog{V41SIM_SOURCE_DIR};
  ModelAnalysis model = analyze_model(load_model_file(data("tests/data/tiny_gqa.yaml")));
  DeploymentSpec deployment = load_deployment_file(data("tests/data/one_gpu.yaml"));
  WorkloadSpec workload = load_workload_file(data("tests/data/fixed_prompts.yaml"));
  LoadOptions options;
  Queue() { options.serve.duration_s = 120; }
  LoadCapacity find() const { return find_load_capacity(catalog, model, deployment, workload, options); }
};

TEST(LoadCapacity, BracketsTheLargestRateWithinTheSla) {
  Queue q;
  q.options.rate_factors = {1, 16, 64, 256};
  const LoadCapacity c = q.find();
  ASSERT_TRUE(c.largest_meeting.has_value());
  ASSERT_TRUE(c.smallest_failing_above.has_value());
  // Points come slowest first; the bracket's ends are neighbours, within 5%.
  for (std::size_t i = 1; i < c.points.size(); ++i) EXPECT_LT(c.points[i - 1].load, c.points[i].load);
  EXPECT_EQ(*c.smallest_failing_above, *c.largest_meeting + 1);
  const LoadPoint& best = c.points[*c.largest_meeting];
  const LoadPoint& over = c.points[*c.smallest_failing_above];
  EXPECT_LE(over.load / best.load, 1.05);
  EXPECT_GE(best.run.within_sla(), 0.99);
  EXPECT_LT(over.run.within_sla(), 0.99);
  // A queue past its service rate never meets a TTFT limit; one at half of
  // it waits a few service times, well inside the 1 s limit.
  const double service_s = best.run.result.mean_prefill_ms / 1e3;
  ASSERT_GT(service_s, 0);
  EXPECT_LT(best.load, 1.0 / service_s);
  EXPECT_GT(best.load, 0.5 / service_s);
  // The same inputs give the same answer.
  const LoadCapacity again = q.find();
  ASSERT_EQ(again.points.size(), c.points.size());
  EXPECT_EQ(again.points[*again.largest_meeting].load, best.load);
}

TEST(LoadCapacity, SaysWhenTheSweepDoesNotBracketIt) {
  Queue q;
  q.options.rate_factors = {0.1, 0.2};
  const LoadCapacity light = q.find();
  EXPECT_TRUE(light.largest_meeting.has_value());
  EXPECT_FALSE(light.smallest_failing_above.has_value());  // above the sweep
  EXPECT_EQ(light.points.size(), 2u);
  q.deployment.sla.ttft_ms = 1e-3;  // no prefill is that fast
  const LoadCapacity none = q.find();
  EXPECT_FALSE(none.largest_meeting.has_value());  // below the sweep
}

// A session's next turn waits for its last answer and think time: where
// answers slow down fewer turns arrive, and the table says why requests/s
// fell as sessions/s rose (and says nothing where it did not).
TEST(LoadCapacity, SaysWhyRequestsFallAsSessionsRise) {
  Queue q;
  LoadCapacity c;
  for (const double sessions : {1.0, 2.0}) {
    LoadPoint p;
    p.load = sessions;
    p.run.result.arrival_rate_per_s = 7 * sessions;
    p.run.seeds.push_back(SeedOutcome{});
    c.points.push_back(p);
  }
  const CapacityReport r{"m", q.deployment, q.workload, q.options, c};
  const std::string why = "requests/s can fall as sessions/s rises";
  EXPECT_EQ(capacity_table(r).to_text().find(why), std::string::npos);
  c.points[1].run.result.arrival_rate_per_s = 6.5;
  EXPECT_NE(capacity_table(r).to_text().find(why), std::string::npos);
}

// The chart draws each rate's p99 over its SLA limit (the mean over seeds),
// TPOT solid and TTFT dashed, the limit at 1; a rate where nothing finished
// has no point.
TEST(LoadCapacity, ChartsEachRatesLatencyOverItsLimit) {
  Queue q;
  q.deployment.sla.ttft_ms = 1000;
  q.deployment.sla.tpot_ms = 50;
  LoadCapacity c;
  for (const double sessions : {0.5, 1.0, 2.0}) {
    LoadPoint p;
    p.load = sessions;
    for (const double jitter : {0.9, 1.1}) {
      SeedOutcome seed;
      if (sessions < 2) {
        seed.tpot_p99_ms = 40 * sessions * jitter, seed.ttft_p99_ms = 500 * sessions * jitter;
        seed.tpot_p99_over_limit =
            seed.tpot_p99_ms / q.deployment.sla.tpot_ms;  // as serve_deployment sets it
        seed.ttft_p99_over_limit = seed.ttft_p99_ms / q.deployment.sla.ttft_ms;
      }
      p.run.seeds.push_back(seed);
    }
    c.points.push_back(p);
  }
  const CapacityReport r{"m", q.deployment, q.workload, q.options, c};
  const std::string svg = capacity_svg({r});
  const auto has = [&svg](const std::string& text) { return svg.find(text) != std::string::npos; };
  EXPECT_TRUE(has(q.deployment.name + ": TPOT p99: 0.5, 0.4<")) << svg;  // 40 x 0.5 ms of 50
  EXPECT_TRUE(has(q.deployment.name + ": TPOT p99: 1, 0.8<"));
  EXPECT_TRUE(has(q.deployment.name + ": TTFT p99: 1, 0.5<"));  // 500 ms of 1000
  EXPECT_FALSE(has(": TPOT p99: 2,"));                          // nothing finished at 2
  EXPECT_TRUE(has("SLA limit: 0.5, 1<"));
  EXPECT_TRUE(has("SLA limit: 2, 1<"));
  EXPECT_TRUE(has("stroke-dasharray"));
  EXPECT_EQ(svg, capacity_svg({r}));
  // A mix whose classes have limits of their own draws the worst class's.
  WorkloadSpec mixed = q.workload;
  mixed.mix.push_back({"chat", 1.0, q.workload, SlaSpec{2000, 0}});
  const CapacityReport mix{"m", q.deployment, mixed, q.options, c};
  EXPECT_NE(capacity_svg({mix}).find(": TPOT p99, worst class: 0.5, 0.4<"), std::string::npos);
}

// The rates that met the SLA are served again, largest first, two at a time,
// until one holds it over the longer run; rates that missed are not asked,
// nor those below the pair where one held.
TEST(LoadCapacity, ConfirmationWalksDownTheMeetingRatesUntilOneHolds) {
  const auto point = [](double rate, bool meets) {
    LoadPoint p;
    p.load = rate;
    p.meets_sla = meets;
    return p;
  };
  LoadCapacity c;
  c.points = {point(0.05, true),  point(0.1, true), point(0.2, true), point(0.3, true),
              point(0.35, false), point(0.4, true), point(0.5, false)};
  std::vector<double> asked;
  std::mutex asking;  // a pair is served at once
  confirm_largest(c, 0.99, [&](const LoadPoint& p) {
    const std::lock_guard<std::mutex> hold(asking);
    asked.push_back(p.load);
    SeedOutcome s;
    s.arrived = 100;
    s.within_sla = p.load < 0.35 ? 1.0 : 0.9;  // the larger rates miss over the longer run
    s.steady = p.load < 0.15;                  // 0.2 fills up over the first half of the run
    s.tail_steady = p.load < 0.25;             // and 0.3 still creeps in its second
    ServedRun longer;
    longer.seeds.push_back(s);
    return longer;
  });
  std::sort(asked.rbegin(), asked.rend());
  EXPECT_EQ(asked, (std::vector<double>{0.4, 0.3, 0.2, 0.1}));  // (0.4, 0.3), then (0.2, 0.1)
  ASSERT_TRUE(c.largest_holding.has_value());
  EXPECT_EQ(c.points[*c.largest_holding].load, 0.2);
  EXPECT_FALSE(c.points[5].confirmation_holds);
  EXPECT_TRUE(c.points[1].confirmation_holds);  // 0.1, asked with 0.2
  EXPECT_FALSE(c.points[0].confirmation.has_value());
  // Settled as a whole with a swing in its second half: it holds.
  SeedOutcome swing;
  swing.arrived = 100;
  swing.within_sla = 1.0;
  swing.tail_steady = false;
  ServedRun swinging;
  swinging.seeds.push_back(swing);
  EXPECT_EQ(swinging.seeds_unsettled_at_end(), 0);
}

// After the walk, the bracket between the rate that held and the next that
// did not is cut until its ends are within the precision, each new rate
// served over both windows; rates that miss the shorter one are not asked.
TEST(LoadCapacity, NarrowingFindsTheSustainedRateToThePrecision) {
  constexpr double kHoldsBelow = 0.27, kMeetsBelow = 0.45;  // the deployment's true limits
  const auto longer = [&](double rate) {
    SeedOutcome s;
    s.arrived = 100;
    s.within_sla = rate < kHoldsBelow ? 1.0 : 0.9;
    s.steady = s.tail_steady = true;
    ServedRun run;
    run.seeds.push_back(s);
    return run;
  };
  LoadCapacity c;
  for (const double rate : {0.1, 0.2, 0.4, 0.8}) {
    LoadPoint p;
    p.load = rate;
    p.meets_sla = rate < kMeetsBelow;
    c.points.push_back(p);
  }
  confirm_largest(c, 0.99, [&](const LoadPoint& p) { return longer(p.load); });
  ASSERT_EQ(c.largest_holding, 1u);  // 0.2 held, 0.4 did not
  std::vector<double> served;
  std::mutex serving;  // narrow_holding serves its rates in parallel
  narrow_holding(c, 0.05, [&](double rate) {
    {
      const std::lock_guard<std::mutex> lock(serving);
      served.push_back(rate);
    }
    LoadPoint p;
    p.load = rate;
    p.meets_sla = rate < kMeetsBelow;
    if (p.meets_sla) confirm(p, 0.99, longer(rate));
    return p;
  });
  ASSERT_TRUE(c.largest_holding && c.smallest_not_holding_above);
  const double held = c.points[*c.largest_holding].load;
  const double not_held = c.points[*c.smallest_not_holding_above].load;
  EXPECT_LT(held, kHoldsBelow);
  EXPECT_GE(not_held, kHoldsBelow);
  EXPECT_LE(not_held / held, 1.05);
  EXPECT_GE(served.size(), 4u);  // 0.2 to 0.4 is a factor 2: two rounds of two rates at least
  EXPECT_TRUE(std::is_sorted(c.points.begin(), c.points.end(),
                             [](const LoadPoint& a, const LoadPoint& b) { return a.load < b.load; }));
  // The shorter window's bracket is found again among the moved points.
  ASSERT_TRUE(c.largest_meeting && c.smallest_failing_above);
  EXPECT_EQ(c.points[*c.largest_meeting].load, 0.4);
  EXPECT_EQ(c.points[*c.smallest_failing_above].load, 0.8);
  for (const LoadPoint& p : c.points) EXPECT_EQ(p.confirmation.has_value(), p.meets_sla && p.load >= 0.2);
}

// The verdict gives the largest rate that held, the next above that did not,
// and any below it that did not hold either (near the limit the verdict moves
// with the sessions drawn).
TEST(LoadCapacity, VerdictNamesTheHeldBracketAndMissesBelowIt) {
  const auto run_of = [](double within, bool settled, double duration_s) {
    SeedOutcome s;
    s.arrived = 1000;
    s.within_sla = within;
    s.steady = s.tail_steady = settled;
    s.usd_per_million_output = 0.35;
    ServedRun run;
    run.seeds.push_back(s);
    run.result.duration_s = duration_s;
    run.cost.known = true;
    return run;
  };
  // rate, meets over the short window, within over the longer one (0: not asked)
  const std::vector<std::tuple<double, bool, double>> rates{
      {0.315, true, 0}, {0.34, true, 0.95}, {0.367, true, 1.0}, {0.397, true, 0.97}, {0.5, false, 0}};
  LoadCapacity c;
  for (const auto& [rate, meets, longer] : rates) {
    LoadPoint p;
    p.load = rate;
    p.run = run_of(meets ? 1.0 : 0.5, true, 200);
    p.meets_sla = meets;
    if (longer > 0) confirm(p, 0.99, run_of(longer, longer >= 0.99, 1800));
    c.points.push_back(p);
  }
  c.largest_meeting = 3, c.smallest_failing_above = 4;
  c.largest_holding = 2, c.smallest_not_holding_above = 3;
  Queue q;
  const std::string verdict = capacity_verdict({"m", q.deployment, q.workload, q.options, c});
  const auto has = [&verdict](const std::string& text) { return verdict.find(text) != std::string::npos; };
  EXPECT_TRUE(
      has("over 1800 s of arrivals it holds up to 0.367 sessions/s (100.0% within, settled; $0.35 per "
          "1M output tokens)"))
      << verdict;
  EXPECT_TRUE(has("not at 0.397 (97.0% within, still moving in its second half)")) << verdict;
  EXPECT_TRUE(has("below it 0.34 (95.0% within, still moving in its second half) did not hold")) << verdict;
  EXPECT_FALSE(has("0.315 (")) << verdict;  // not asked: below the rate that held
}

// A closed loop's load is its sessions at a time: swept and cut in whole
// sessions, and said so in every view.
TEST(LoadCapacity, AClosedLoopIsSearchedInWholeSessionsAtATime) {
  Queue q;
  q.workload = load_workload_file(testing::one_turn_workload(
      "v41sim_capacity_closed_loop", "{process: closed_loop, concurrency: 4}", 2048, 1));
  q.options.serve.duration_s = 30;
  q.options.rate_factors = {0.25, 4, 64};
  const LoadCapacity c = q.find();
  ASSERT_TRUE(c.whole_loads);
  for (std::size_t i = 0; i < c.points.size(); ++i) {
    EXPECT_EQ(c.points[i].load, std::round(c.points[i].load)) << i;
    if (i > 0) {
      EXPECT_LT(c.points[i - 1].load, c.points[i].load);
    }
  }
  EXPECT_EQ(c.points.front().load, 1);  // 0.25 x 4, at least one session
  ASSERT_TRUE(c.largest_meeting && c.smallest_failing_above);
  const double best = c.points[*c.largest_meeting].load;
  const double over = c.points[*c.smallest_failing_above].load;
  EXPECT_TRUE(over - best == 1 || over / best <= 1.05) << best << " " << over;
  // Each of N prompts waits for the others' prefill steps: TTFT about N
  // service times, so the limit is about the SLA's TTFT over one.
  const double service_ms = c.points[*c.largest_meeting].run.result.mean_prefill_ms;
  EXPECT_LE(best, q.deployment.sla.ttft_ms / service_ms + 1);
  const std::vector<DeploymentSpec> deployments{q.deployment};
  const std::vector<LoadCapacity> capacities{c};
  const std::string model = "m";
  const std::vector<CapacityReport> reports =
      capacity_reports(model, deployments, q.workload, q.options, capacities);
  EXPECT_NE(
      capacity_verdict(reports.front()).find(fmt::format("within the SLA up to {} sessions at a time", best)),
      std::string::npos)
      << capacity_verdict(reports.front());
  const nlohmann::json j = capacity_json(reports.front());
  EXPECT_EQ(j.at("largest_meeting_concurrency"), best);
  EXPECT_EQ(j.at("workload_concurrency"), 4);
  EXPECT_EQ(j.at("points").front().at("concurrency"), 1);
}

TEST(LoadCapacity, BadOptionsAreInputErrors) {
  Queue q;
  const auto field_of = [&q]() -> std::string {
    try {
      q.find();
    } catch (const InputError& e) {
      return e.where().field;
    }
    return "";
  };
  q.options.precision = 0;
  EXPECT_EQ(field_of(), "--precision");
  q.options.precision = 0.05;
  q.options.rate_factors = {1, -2};
  EXPECT_EQ(field_of(), "--rate-factors");
  q.options.rate_factors = {1};
  q.options.min_within_sla = 1.5;
  EXPECT_EQ(field_of(), "--min-within-sla");
  q.options.min_within_sla = 0.99;
  // A trace has a rate to scale (its sessions over its last row's time) unless its rows all come at 0.
  q.workload = load_workload_file(data("workloads/agent_trace.yaml"));
  for (WorkloadSpec::TraceRow& row : q.workload.trace) row.time_s = 0;
  q.workload.sessions_per_s = 0;
  EXPECT_EQ(field_of(), "arrival");
}

}  // namespace
}  // namespace v41sim
