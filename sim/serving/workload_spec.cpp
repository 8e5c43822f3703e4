#include "sim/serving/workload_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "sim/common/csv_cells.h"
#include "sim/des/random.h"
#include "sim/des/sim_time.h"
#include "sim/serving/mooncake_trace.h"

namespace v41sim {
namespace {

constexpr int64_t kReferenceEffort = 75;  // API level "high"
constexpr double kEffortSpanRatio = 2.5;  // output tokens, effort 100 vs 25 (V4.1 report)
constexpr double kEffortSpan = 75.0;      // 100 - 25

// time_s,session,input_tokens,output_tokens: one row per turn, times non-decreasing.
std::vector<WorkloadSpec::TraceRow> read_trace_csv(const std::string& path) {
  const char* const kColumns[] = {"time_s", "session", "input_tokens", "output_tokens"};
  std::vector<WorkloadSpec::TraceRow> rows;
  bool header = false;
  for (const CsvLine& line : read_csv_lines(path)) {
    const std::vector<std::string>& cells = line.cells;
    if (cells.size() != 4) {
      throw InputError({path, line.number, ""},
                       fmt::format("expected 4 columns ({}), got {}",
                                   "time_s,session,input_tokens,output_tokens", cells.size()));
    }
    if (!header) {
      for (int c = 0; c < 4; ++c) {
        if (cells[static_cast<std::size_t>(c)] != kColumns[c]) {
          throw InputError({path, line.number, kColumns[c]},
                           "expected the header time_s,session,input_tokens,output_tokens");
        }
      }
      header = true;
      continue;
    }
    WorkloadSpec::TraceRow row;
    // A finite number in [min, max]; counts (whole) without a fraction.
    auto number_in = [&](int c, double min, double max, bool whole) {
      return csv_number(cells[static_cast<std::size_t>(c)], min, max, whole,
                        {path, line.number, kColumns[c]});
    };
    row.time_s = number_in(0, 0, longest_run_s(), false);
    row.session = static_cast<int64_t>(number_in(1, 0, kMaxTraceId, true));
    row.input_tokens = static_cast<int64_t>(number_in(2, 1, kMaxTokensPerRequest, true));
    row.output_tokens = static_cast<int64_t>(number_in(3, 1, kMaxTokensPerRequest, true));
    if (!rows.empty() && row.time_s < rows.back().time_s) {
      throw InputError({path, line.number, "time_s"}, "rows must be in time order");
    }
    rows.push_back(row);
  }
  if (rows.empty()) throw InputError({path, 0, ""}, "the trace has no rows");
  return rows;
}

}  // namespace

double Distribution::sample(SplitMix64& rng) const {
  double x = mean;
  switch (kind) {
    case Kind::kFixed:
      break;
    case Kind::kUniform:
      x = min + (max - min) * uniform01(rng);
      break;
    case Kind::kExponential:
      x = exponential(rng, mean);
      break;
    case Kind::kLognormal: {
      // Parameterised by its mean: mu = ln(mean) - sigma^2 / 2.
      const double mu = std::log(mean) - 0.5 * sigma * sigma;
      x = std::exp(mu + sigma * standard_normal(rng));
      break;
    }
  }
  return std::clamp(x, min, max);
}

int64_t Distribution::sample_whole(SplitMix64& rng, double scale) const {
  const double lowest = std::ceil(min), highest = std::floor(max);
  if (kind != Kind::kUniform || lowest > highest) return std::llround(sample(rng) * scale);
  const double span = highest - lowest + 1;
  return std::llround((lowest + std::min(std::floor(span * uniform01(rng)), span - 1)) * scale);
}

double longest_run_s() { return std::floor(SimTime::max().s() / 4); }

Distribution read_distribution(const YamlNode& node, double ceiling) {
  node.expect_only({"dist", "value", "mean", "sigma", "min", "max"});
  Distribution d;
  const std::string kind = node.required("dist").as_string();
  auto at_most_ceiling = [ceiling](const YamlNode& value) {
    const double x = value.as_positive_double();
    if (x > ceiling) value.fail(fmt::format("expected at most {:.0f}, got {:g}", ceiling, x));
    return x;
  };
  if (kind == "fixed") return Distribution::fixed(at_most_ceiling(node.required("value")));
  d.min = node.required("min").as_non_negative_double();
  d.max = at_most_ceiling(node.required("max"));
  if (d.max < d.min) node.required("max").fail("max is below min");
  if (kind == "uniform") {
    d.kind = Distribution::Kind::kUniform;
    d.mean = 0.5 * (d.min + d.max);
  } else if (kind == "exponential") {
    d.kind = Distribution::Kind::kExponential;
    d.mean = node.required("mean").as_positive_double();
  } else if (kind == "lognormal") {
    d.kind = Distribution::Kind::kLognormal;
    d.mean = node.required("mean").as_positive_double();
    d.sigma = node.required("sigma").as_positive_double();
  } else {
    node.required("dist").fail("unknown distribution '" + kind +
                               "' (expected fixed, uniform, exponential, lognormal)");
  }
  return d;
}

SourcedValue effort_multiplier(int64_t effort) {
  const double exponent = static_cast<double>(effort - kReferenceEffort) / kEffortSpan;
  return SourcedValue::assumed(
      std::pow(kEffortSpanRatio, exponent),
      fmt::format("output x {:.2f} at effort {} vs 75: exponential through the report's "
                  "2.5x from effort 25 to 100",
                  std::pow(kEffortSpanRatio, exponent), effort));
}

namespace {

// `resumed: {fraction: F, gap_s: DIST}`; the gap may be left out where F is 0.
WorkloadSpec::Resumption read_resumption(const YamlNode& node) {
  node.expect_only({"fraction", "gap_s"});
  WorkloadSpec::Resumption r;
  const YamlNode fraction = node.required("fraction");
  r.fraction = fraction.as_non_negative_double();
  if (r.fraction > 1)
    fraction.fail(fmt::format("expected a share of the sessions, 0 to 1, got {:g}", r.fraction));
  // The gap is not simulated (the earlier life is stored that long before
  // the resumed turn), but it is a time: it stays within simulated time's range.
  if (r.fraction > 0 && !node.has("gap_s")) {
    node.fail(
        "expected gap_s, the time before a session comes back (a distribution), where fraction is above 0");
  }
  if (node.has("gap_s")) r.gap_s = read_distribution(node.required("gap_s"), longest_run_s());
  return r;
}

// The sessions a workload's turns come from: their shape and effort level.
void read_sessions(const YamlNode& root, WorkloadSpec& w) {
  const YamlNode session = root.required("session");
  session.expect_only(
      {"turns", "first_input_tokens", "turn_input_tokens", "output_tokens", "think_time_s", "resumed"});
  constexpr double kMaxTurns = 1e6;
  w.turns = read_distribution(session.required("turns"), kMaxTurns);
  w.first_input_tokens = read_distribution(session.required("first_input_tokens"), kMaxTokensPerRequest);
  w.turn_input_tokens = read_distribution(session.required("turn_input_tokens"), kMaxTokensPerRequest);
  w.output_tokens = read_distribution(session.required("output_tokens"), kMaxTokensPerRequest);
  w.think_time_s = read_distribution(session.required("think_time_s"), longest_run_s());
  w.resumed = read_resumption(session.required("resumed"));
  const YamlNode effort = root.required("effort");
  const std::string level = effort.as_string();
  if (level == "low") {
    w.effort = 50;
  } else if (level == "high") {
    w.effort = 75;
  } else if (level == "max") {
    w.effort = 100;
  } else {
    const int64_t b = effort.as_int();
    if (b < 1 || b > 100) effort.fail(fmt::format("expected low, high, max or 1..100, got {}", b));
    w.effort = b;
  }
  w.effort_output_multiplier = effort_multiplier(w.effort);
}

// A class's own latency limits, `sla: {ttft_ms: T, tpot_ms: P, itl_ms: I}`,
// any of the fields: the others stay the deployment's.
SlaSpec read_class_sla(const YamlNode& node) {
  node.expect_only({"ttft_ms", "tpot_ms", "itl_ms"});
  SlaSpec sla;
  if (const auto ttft = node.optional("ttft_ms")) sla.ttft_ms = ttft->as_positive_double();
  if (const auto tpot = node.optional("tpot_ms")) sla.tpot_ms = tpot->as_positive_double();
  if (const auto itl = node.optional("itl_ms")) sla.itl_ms = itl->as_positive_double();
  if (!sla.gives_any())
    node.fail("expected ttft_ms, tpot_ms, itl_ms or some of them (ms): the limits this class is held to");
  return sla;
}

// A mix's classes: each names a workload file of sessions (by name, in the
// mix file's folder, or a path relative to it), its share of arrivals (the
// shares taken relative to their sum) and, where it has its own, its SLA and
// its priority.
std::vector<WorkloadMixClass> read_mix(const YamlNode& node, const std::string& path) {
  std::vector<WorkloadMixClass> mix;
  double total = 0;
  for (const YamlNode& item : node.elements()) {
    item.expect_only({"workload", "share", "sla", "priority"});
    const YamlNode named = item.required("workload");
    const std::string name = named.as_string();
    std::filesystem::path file = std::filesystem::path(path).parent_path() / name;
    if (file.extension() != ".yaml") file += ".yaml";
    if (!std::filesystem::exists(file)) named.fail("no workload file at " + file.string());
    // Looked at before it is read: a mix naming itself would read itself forever.
    if (YamlNode::load_file(file.string()).has("mix"))
      named.fail("a class is a workload of sessions, not a mix");
    WorkloadMixClass c;
    c.sessions = load_workload_file(file.string());
    if (c.sessions.arrival == WorkloadSpec::Arrival::kTrace) {
      named.fail("a class is a workload of sessions, not a trace");
    }
    c.name = c.sessions.name;
    c.share = item.required("share").as_positive_double();
    if (const auto sla = item.optional("sla")) c.sla = read_class_sla(*sla);
    if (const auto priority = item.optional("priority")) c.priority = priority->as_int();
    total += c.share;
    mix.push_back(std::move(c));
  }
  if (mix.empty()) node.fail("expected at least one class: {workload: NAME, share: S}");
  if (!std::isfinite(total)) node.fail(fmt::format("the shares sum past a double's range ({:g})", total));
  for (WorkloadMixClass& c : mix) c.share /= total;
  return mix;
}

}  // namespace

bool has_class_slas(const WorkloadSpec& w) {
  return std::any_of(w.mix.begin(), w.mix.end(), [](const WorkloadMixClass& c) { return c.sla.gives_any(); });
}

bool has_class_priorities(const WorkloadSpec& w) {
  return std::any_of(w.mix.begin(), w.mix.end(),
                     [&w](const WorkloadMixClass& c) { return c.priority != w.mix.front().priority; });
}

WorkloadSpec load_workload_file(const std::string& path) {
  const YamlNode root = YamlNode::load_file(path);
  root.expect_only({"name", "source", "arrival", "session", "effort", "mix"});
  WorkloadSpec w;
  w.file = path;
  w.name = root.required("name").as_string();
  w.source = root.required("source").as_string();
  const YamlNode arrival = root.required("arrival");
  arrival.expect_only({"process", "sessions_per_s", "burst_factor", "burst_fraction", "burst_period_s",
                       "file", "block_tokens", "concurrency", "prompts"});
  const std::string process = arrival.required("process").as_string();
  if (process == "trace") {
    w.arrival = WorkloadSpec::Arrival::kTrace;
    const YamlNode file = arrival.required("file");
    const std::string relative = file.as_string();
    const std::string resolved = (std::filesystem::path(path).parent_path() / relative).string();
    if (!std::filesystem::exists(resolved)) file.fail("no trace file at " + resolved);
    // The file's kind by its name: our CSV of sessions' turns, or Mooncake's
    // JSON lines of block-hashed requests, whose block size the trace does not say.
    const std::string kind = std::filesystem::path(resolved).extension().string();
    if (kind == ".jsonl") {
      const YamlNode block = arrival.required("block_tokens");
      w.trace_block_tokens = block.as_positive_int();
      w.trace = read_mooncake_trace(resolved, w.trace_block_tokens);
    } else if (kind == ".csv") {
      if (arrival.has("block_tokens")) {
        arrival.required("block_tokens").fail("only a block-hashed trace (.jsonl) has blocks");
      }
      w.trace = read_trace_csv(resolved);
    } else {
      file.fail(
          "expected a .csv trace (time_s,session,input_tokens,output_tokens) or a .jsonl one "
          "(Mooncake's: timestamp, input_length, output_length, hash_ids)");
    }
    std::set<int64_t> sessions;
    for (const WorkloadSpec::TraceRow& row : w.trace) sessions.insert(row.session);
    const double span_s = w.trace.back().time_s;
    w.sessions_per_s = span_s > 0 ? static_cast<double>(sessions.size()) / span_s : 0.0;
    w.sessions_per_s_where = file.location();
    for (const char* unused : {"session", "effort", "mix"}) {
      if (root.has(unused)) root.required(unused).fail("not used with a trace: the trace gives every turn");
    }
    w.effort_output_multiplier = effort_multiplier(kReferenceEffort);
    return w;
  }
  if (process != "poisson" && process != "bursty" && process != "closed_loop") {
    arrival.required("process").fail("unknown arrival process '" + process +
                                     "' (expected poisson, bursty, closed_loop or trace)");
  }
  if (process == "closed_loop") {
    if (arrival.has("sessions_per_s")) {
      arrival.required("sessions_per_s")
          .fail("a closed loop has no arrival rate: its concurrency sets the load (remove sessions_per_s)");
    }
    const YamlNode concurrency = arrival.required("concurrency");
    w.arrival = WorkloadSpec::Arrival::kClosedLoop;
    w.concurrency = concurrency.as_positive_int();
    if (w.concurrency > kMostConcurrentSessions) {
      concurrency.fail(fmt::format("expected at most {} sessions at a time", kMostConcurrentSessions));
    }
    w.concurrency_where = concurrency.location();
    if (const auto prompts = arrival.optional("prompts")) {
      w.prompts = prompts->as_positive_int();
      if (static_cast<double>(w.prompts) > kMaxSessionsPerRun) {
        prompts->fail(
            fmt::format("expected at most {:g} sessions, the most one run starts", kMaxSessionsPerRun));
      }
      w.prompts_where = prompts->location();
    }
  } else {
    for (const char* loop_only : {"concurrency", "prompts"}) {
      if (arrival.has(loop_only)) arrival.required(loop_only).fail("only a closed_loop arrival has one");
    }
    const YamlNode rate = arrival.required("sessions_per_s");
    w.sessions_per_s = rate.as_positive_double();
    w.sessions_per_s_where = rate.location();
  }
  if (process == "bursty") {
    w.arrival = WorkloadSpec::Arrival::kBursty;
    w.burst_factor = arrival.required("burst_factor").as_positive_double();
    w.burst_fraction = arrival.required("burst_fraction").as_positive_double();
    if (w.burst_fraction >= 1) arrival.required("burst_fraction").fail("expected a fraction below 1");
    w.burst_period_s = arrival.required("burst_period_s").as_positive_double();
  }
  if (const auto mix = root.optional("mix")) {
    for (const char* unused : {"session", "effort"}) {
      if (root.has(unused)) root.required(unused).fail("not used with a mix: each class's workload gives it");
    }
    w.mix = read_mix(*mix, path);
    // Not drawn from: each session takes its class's output lengths.
    w.effort_output_multiplier = effort_multiplier(kReferenceEffort);
    return w;
  }
  read_sessions(root, w);
  return w;
}

WorkloadSpec at_rate(WorkloadSpec w, double sessions_per_s, const InputLocation& where) {
  if (w.arrival == WorkloadSpec::Arrival::kClosedLoop) {
    throw InputError(where, fmt::format("'{}' is a closed loop of {} sessions at a time: it has no arrival "
                                        "rate to set; its concurrency sets the load (--concurrency)",
                                        w.name, w.concurrency));
  }
  w.sessions_per_s_where = where;  // a rate too high for a run is then named where it was set
  if (w.arrival != WorkloadSpec::Arrival::kTrace) {
    w.sessions_per_s = sessions_per_s;
    return w;
  }
  if (!(w.sessions_per_s > 0)) {
    throw InputError(where, "the trace's rows all come at time 0: it has no rate to scale");
  }
  const double stretch = w.sessions_per_s / sessions_per_s;
  if (!(w.trace.back().time_s * stretch <= longest_run_s())) {
    throw InputError(where, fmt::format("{:g} sessions/s stretches the trace's {:g} s past the simulator's "
                                        "clock ({:.0f} s)",
                                        sessions_per_s, w.trace.back().time_s, longest_run_s()));
  }
  for (WorkloadSpec::TraceRow& row : w.trace) row.time_s *= stretch;
  w.sessions_per_s = sessions_per_s;
  return w;
}

WorkloadSpec at_concurrency(WorkloadSpec w, int64_t concurrency, const InputLocation& where) {
  if (w.arrival != WorkloadSpec::Arrival::kClosedLoop) {
    throw InputError(where, fmt::format("'{}' is not a closed loop (its arrival process is not closed_loop): "
                                        "its arrival rate sets the load (--sessions-per-s)",
                                        w.name));
  }
  if (concurrency < 1 || concurrency > kMostConcurrentSessions) {
    throw InputError(where, fmt::format("expected 1 to {} sessions at a time, got {}",
                                        kMostConcurrentSessions, concurrency));
  }
  w.concurrency = concurrency;
  return w;
}

bool whole_loads(const WorkloadSpec& w) { return w.arrival == WorkloadSpec::Arrival::kClosedLoop; }

double load_of(const WorkloadSpec& w) {
  return whole_loads(w) ? static_cast<double>(w.concurrency) : w.sessions_per_s;
}

WorkloadSpec at_load(WorkloadSpec w, double load, const InputLocation& where) {
  if (!whole_loads(w)) return at_rate(std::move(w), load, where);
  if (!(load >= 0.5 && load <= static_cast<double>(kMostConcurrentSessions))) {
    throw InputError(
        where, fmt::format("expected 1 to {} sessions at a time, got {:g}", kMostConcurrentSessions, load));
  }
  return at_concurrency(std::move(w), std::llround(load), where);
}

std::string load_number(const WorkloadSpec& w, double load) {
  return whole_loads(w) ? fmt::format("{:.0f}", load) : fmt::format("{:.3g}", load);
}

const char* load_unit(const WorkloadSpec& w) { return whole_loads(w) ? "sessions at a time" : "sessions/s"; }

std::string load_text(const WorkloadSpec& w, double load) {
  return load_number(w, load) + " " + load_unit(w);
}

std::string load_phrase(const WorkloadSpec& w) {
  if (whole_loads(w)) return load_text(w, load_of(w)) + " (closed loop)";
  return fmt::format("{:.4g} sessions/s", w.sessions_per_s);
}

}  // namespace v41sim
