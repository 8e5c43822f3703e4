#include "sim/des/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <stdexcept>
#include <vector>

#include "sim/des/random.h"

namespace v41sim {
namespace {

TEST(Simulator, RunsEventsInTimeThenSchedulingOrder) {
  Simulator sim(1);
  std::vector<int> order;
  sim.schedule_at(SimTime::from_ns(20), [&] { order.push_back(3); });
  sim.schedule_at(SimTime::from_ns(10), [&] { order.push_back(1); });
  sim.schedule_at(SimTime::from_ns(10), [&] { order.push_back(2); });  // same time: scheduling order
  sim.run_until(SimTime::from_ns(100));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(sim.now(), SimTime::from_ns(100));
  EXPECT_EQ(sim.events_processed(), 3u);
}

TEST(Simulator, ManyEventsRunInTimeThenSchedulingOrder) {
  // Thousands of events at few distinct times, some scheduled while others
  // run: each runs after every event of an earlier time, and after those of
  // its own time scheduled before it.
  Simulator sim(1);
  std::mt19937_64 rng(7);
  std::vector<std::pair<int64_t, int>> ran;  // (time, scheduling order)
  int scheduled = 0;
  std::function<void(int64_t)> add = [&](int64_t ns) {
    const int order = scheduled++;
    sim.schedule_at(SimTime::from_ns(ns), [&, ns, order] {
      ran.emplace_back(ns, order);
      if (order % 3 == 0 && scheduled < 6000) add(ns + static_cast<int64_t>(rng() % 5));
    });
  };
  for (int i = 0; i < 3000; ++i) add(static_cast<int64_t>(rng() % 50));
  sim.run_until(SimTime::max());
  ASSERT_EQ(ran.size(), static_cast<std::size_t>(scheduled));
  EXPECT_TRUE(std::is_sorted(ran.begin(), ran.end()));
}

TEST(Simulator, CancelledEventsDoNotRun) {
  Simulator sim(1);
  int ran = 0;
  const EventId id = sim.schedule_after(SimTime::from_ns(5), [&] { ++ran; });
  sim.schedule_after(SimTime::from_ns(6), [&] { ran += 10; });
  sim.cancel(id);
  sim.run_until(SimTime::max());
  EXPECT_EQ(ran, 10);
}

TEST(Simulator, EventsCanScheduleEventsButNotInThePast) {
  Simulator sim(1);
  int chain = 0;
  std::function<void()> next = [&] {
    if (++chain < 1000) sim.schedule_after(SimTime::from_ns(1), next);
  };
  sim.schedule_at(SimTime(), next);
  sim.run_until(SimTime::max());
  EXPECT_EQ(chain, 1000);
  EXPECT_EQ(sim.now(), SimTime::from_ns(999));
  EXPECT_THROW(sim.schedule_at(SimTime::from_ns(1), [] {}), std::logic_error);
}

// A cost figure outside simulated time's range is refused, never wrapped
// into a time in the past.
TEST(SimTime, FiguresOutsideTheRangeThrow) {
  EXPECT_EQ(SimTime::from_us(1.5).ps(), 1500000);
  EXPECT_EQ(SimTime::from_s(86400.0 * 100).s(), 86400.0 * 100);
  EXPECT_THROW(SimTime::from_s(86400.0 * 107), std::out_of_range);
  EXPECT_THROW(SimTime::from_us(-1), std::out_of_range);
  EXPECT_THROW(SimTime::from_us(std::nan("")), std::out_of_range);
  EXPECT_THROW(SimTime::from_s(INFINITY), std::out_of_range);
}

// Two times inside the range whose sum is not (a step that ends past the
// range, started late in a run) throw as well, instead of wrapping negative:
// the simulator would then refuse the event as "scheduled in the past", an
// internal error where the input is to blame.
TEST(SimTime, SumsPastTheRangeThrow) {
  const SimTime late = SimTime::from_s(86400.0 * 60);
  EXPECT_EQ((late + SimTime::from_s(86400.0 * 40)).s(), 86400.0 * 100);
  EXPECT_THROW(late + SimTime::from_s(86400.0 * 60), std::out_of_range);
  SimTime t = late;
  EXPECT_THROW(t += SimTime::from_s(86400.0 * 60), std::out_of_range);
  EXPECT_EQ(t, late);
  EXPECT_THROW(SimTime::max() + SimTime::from_ps(1), std::out_of_range);
}

// Scheduling a step that ends past the range refuses with the range's own
// message, not the simulator's internal "in the past".
TEST(Simulator, AStepEndingPastTheRangeIsOutOfRange) {
  Simulator sim(1);
  sim.schedule_at(SimTime::from_s(86400.0 * 60),
                  [&] { sim.schedule_at(sim.now() + SimTime::from_s(86400.0 * 60), [] {}); });
  EXPECT_THROW(sim.run_until(SimTime::max()), std::out_of_range);
}

TEST(Simulator, RandomStreamsAreIndependentAndRepeatable) {
  const Simulator a(42);
  const Simulator b(42);
  auto a1 = a.random_stream("arrivals");
  auto b1 = b.random_stream("arrivals");
  auto a2 = a.random_stream("sessions");
  EXPECT_EQ(a1(), b1());
  EXPECT_NE(a.random_stream("arrivals")(), a2());
  EXPECT_NE(Simulator(43).random_stream("arrivals")(), a.random_stream("arrivals")());
}

TEST(Random, ExponentialHasItsMean) {
  std::mt19937_64 rng(7);
  double sum = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) sum += exponential(rng, 3.0);
  EXPECT_NEAR(sum / n, 3.0, 0.03);
}

}  // namespace
}  // namespace v41sim
