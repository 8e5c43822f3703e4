// WorkloadSpec: the traffic of a run (workloads/*.yaml): how sessions arrive,
// how many turns they have, how long inputs and outputs are, how long users
// (or agents) think between turns, and the reasoning-effort level.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sim/common/sourced_value.h"
#include "sim/common/yaml_reader.h"
#include "sim/des/random.h"
#include "sim/model/model_spec.h"
#include "sim/serving/sla_spec.h"

namespace v41sim {

// A positive random quantity: fixed, uniform, exponential or lognormal, clamped to [min, max].
struct Distribution {
  enum class Kind { kFixed, kUniform, kExponential, kLognormal };
  Kind kind = Kind::kFixed;
  double mean = 0;   // fixed value, or the mean
  double sigma = 0;  // lognormal shape
  double min = 0;
  double max = 0;
  static Distribution fixed(double value) {
    return {.kind = Kind::kFixed, .mean = value, .min = value, .max = value};
  }
  double sample(SplitMix64& rng) const;
  // A count (turns, tokens) times `scale`, rounded: a uniform one draws each
  // whole number from min to max with the same chance (rounding a continuous
  // draw would give the two ends half of it); one draw either way.
  int64_t sample_whole(SplitMix64& rng, double scale = 1.0) const;
};

// `ceiling`: the largest value the quantity may take (a fixed value or max
// above it is refused: counts past it would not stay exact).
Distribution read_distribution(const YamlNode& node, double ceiling);

// The most tokens one prompt or output may have (a trace row or a
// distribution's max): past any model's context, exact in 32 bits.
inline constexpr double kMaxTokensPerRequest = static_cast<double>(kMostContextTokens);

// The largest id a trace may give a session or a block: 2^53, past which a
// double (as CSV and JSON numbers are read) no longer holds every integer.
inline constexpr double kMaxTraceId = 9007199254740992;

// The most sessions a closed loop may keep in flight: a hundred thousand
// clients is past any serving benchmark's, and far below a run's session guard.
inline constexpr int64_t kMostConcurrentSessions = 100000;

// Sessions one run may be asked to start: a guard against a rate or a length
// that would run for days (at the measured few ms of wall time per session,
// a million is about an hour).
inline constexpr double kMaxSessionsPerRun = 1e6;

// The longest a run (or a think time) may last: a quarter of simulated time's
// range (SimTime: ~106 days), leaving the rest for requests in flight to drain.
double longest_run_s();

struct WorkloadMixClass;

struct WorkloadSpec {
  std::string name;
  std::string file;
  std::string source;
  // kClosedLoop: `concurrency` sessions at all times, as a benchmark client
  // with that many parallel requests keeps them (vllm bench serve
  // --max-concurrency, SGLang's bench_serving): all start at time 0, and each
  // one that ends (its last turn done, or refused) is followed at once by a new
  // one. Its arrival rate is what the deployment's speed makes it.
  enum class Arrival { kPoisson, kBursty, kTrace, kClosedLoop };
  Arrival arrival = Arrival::kPoisson;
  double sessions_per_s = 0;           // a trace: its sessions over its last row's time; closed loop: 0
  InputLocation sessions_per_s_where;  // the file's field, or the flag that replaced it
  int64_t concurrency = 0;             // closed loop: sessions in flight
  InputLocation concurrency_where;     // the file's field, or the flag that replaced it
  // Closed loop: the sessions it starts in all, as a benchmark client's
  // prompt count (--num-prompts): once that many started, one that ends is
  // not followed by another, and the run's window ends with the last to end
  // (the benchmark's own span). 0: no end, a new session for every one that ends.
  int64_t prompts = 0;
  InputLocation prompts_where;
  double burst_factor = 1;    // bursty: rate multiplier while a burst is on
  double burst_fraction = 0;  // bursty: share of time in a burst
  double burst_period_s = 0;
  Distribution turns;
  Distribution first_input_tokens;  // the opening prompt (repository, documents, history)
  Distribution turn_input_tokens;   // tokens each later turn adds (tool output, user message)
  Distribution output_tokens;       // at the reference effort level
  Distribution think_time_s;
  // Sessions that come back: a share of the arriving sessions are earlier
  // ones resumed after a gap (an agent picked up the next morning, a chat
  // reopened). The earlier life is drawn as a new session's turns; its
  // context is the prefix of the resumed session's first turn, which adds
  // a later turn's tokens (turn_input_tokens). Whether the SSD tier still
  // holds that prefix is what its retention buys.
  struct Resumption {
    double fraction = 0;  // of arriving sessions, in [0, 1]
    Distribution gap_s;   // from the earlier life's last turn to the resumed first turn
  };
  Resumption resumed;
  int64_t effort = 75;                    // reasoning effort b in [1, 100]
  SourcedValue effort_output_multiplier;  // derived from `effort`, with its assumption
  // kTrace: one row per turn, in time order; a session's turns share a growing prefix.
  struct TraceRow {
    double time_s = 0;
    int64_t session = 0;
    int64_t input_tokens = 0;
    int64_t output_tokens = 0;
    // A block-hashed trace (Mooncake's format): the prompt's blocks of
    // `trace_block_tokens` tokens, each named by the hash of its content and
    // all before it, so two prompts share a prefix exactly as far as they share
    // leading ids; each row is a session of its own, and what it finds cached
    // is the run of its leading blocks the SSD tier still holds.
    std::vector<int64_t> blocks;
    int64_t blocks_first_seen = 0;    // of its blocks, those no earlier row names
    int64_t blocks_leading_seen = 0;  // its leading blocks an earlier row names, up to the first new one
  };
  std::vector<TraceRow> trace;
  int64_t trace_block_tokens = 0;  // > 0: a block-hashed trace
  // A mix of traffic: each arriving session is of one class, drawn with the
  // classes' shares, and takes its turns, lengths, think times, resumption
  // and effort from that class's own workload file (whose arrival is unused);
  // the fields above then describe no sessions. Empty: one class, this one.
  std::vector<WorkloadMixClass> mix;
};

struct WorkloadMixClass {
  std::string name;  // the class's workload name
  double share = 0;  // of arriving sessions; the classes' shares sum to 1
  WorkloadSpec sessions;
  SlaSpec sla;  // the class's own limits where the mix gives them (held_to); zeros: the deployment's
  // Its requests wait in the prefill and decode queues ahead of those of a
  // higher number (join_by_priority); every class 0 unless the mix says.
  int64_t priority = 0;
};

WorkloadSpec load_workload_file(const std::string& path);

// Whether some class of a mix gives its own latency limits; whether the classes' priorities differ.
bool has_class_slas(const WorkloadSpec& w);
bool has_class_priorities(const WorkloadSpec& w);

// The same traffic with sessions arriving at `sessions_per_s`: a Poisson or
// bursty process's rate replaced; a trace's times scaled by its own rate
// (its sessions over its last row's time) over this one, its sessions, turns
// and tokens as they are (as trace replayers speed a trace up). Throws
// InputError naming `where` for a trace whose rows all come at time 0, or
// one stretched past the simulator's clock.
WorkloadSpec at_rate(WorkloadSpec w, double sessions_per_s, const InputLocation& where);

// The same closed loop with `concurrency` sessions in flight; InputError
// naming `where` for a workload that is not a closed loop.
WorkloadSpec at_concurrency(WorkloadSpec w, int64_t concurrency, const InputLocation& where);

// The load a capacity search moves: an open loop's arrival rate (sessions/s;
// a trace's times scaled to it), a closed loop's sessions at a time (whole).
double load_of(const WorkloadSpec& w);
bool whole_loads(const WorkloadSpec& w);
// The same traffic at `load` (at_rate or at_concurrency, rounded); InputError naming `where`.
WorkloadSpec at_load(WorkloadSpec w, double load, const InputLocation& where);
// A load in the workload's unit: "0.43" and "sessions/s", or "32" and
// "sessions at a time"; load_text joins them.
std::string load_number(const WorkloadSpec& w, double load);
const char* load_unit(const WorkloadSpec& w);
std::string load_text(const WorkloadSpec& w, double load);
// The workload's own load, for a table's title: "0.43 sessions/s" or "32
// sessions at a time (closed loop)".
std::string load_phrase(const WorkloadSpec& w);

// Output-length multiplier of effort b relative to b = 75 ("high"): the V4.1
// report gives ~2.5x output tokens from b = 25 to b = 100; an exponential
// in b through that ratio is our assumption.
SourcedValue effort_multiplier(int64_t effort);

}  // namespace v41sim
