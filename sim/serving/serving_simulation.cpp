// ServingSimulation: construction, arrivals and sessions, bookkeeping and
// results. Prefill and decode live in serving_prefill.cpp and serving_decode.cpp.
#include "sim/serving/serving_simulation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

#include "sim/common/input_error.h"
#include "sim/des/random.h"
#include "sim/metrics/steady_state.h"
#include "sim/serving/pool_setup.h"
#include "sim/serving/serving_entities.h"

namespace v41sim {
namespace {

// Occupancy is sampled this many times over a run.
constexpr double kOccupancySamples = 200;
// Requests in the system are averaged over this many slices of the measured
// window: 40 batch means of five for MSER-5 (sim/metrics/steady_state.h).
constexpr double kSteadyStateSlices = 200;

// Poisson or bursty arrivals: at most as many sessions as the peak rate
// brings over the run; more than a run is allowed is the user's error.
void check_sessions_asked(const WorkloadSpec& w, double duration_s) {
  // The trace's rows bound it; a closed loop is checked as it starts sessions.
  if (w.arrival == WorkloadSpec::Arrival::kTrace || w.arrival == WorkloadSpec::Arrival::kClosedLoop) return;
  const double peak =
      w.sessions_per_s * std::max(1.0, w.arrival == WorkloadSpec::Arrival::kBursty ? w.burst_factor : 1.0);
  if (peak * duration_s > kMaxSessionsPerRun) {
    throw InputError(w.sessions_per_s_where,
                     fmt::format("{:g} sessions/s over {:g} s asks for up to {:.3g} sessions; one run starts "
                                 "at most {:g}: lower the rate or the duration",
                                 w.sessions_per_s, duration_s, peak * duration_s, kMaxSessionsPerRun));
  }
}

int64_t draw_tokens(const Distribution& d, SplitMix64& rng, double scale = 1.0) {
  return std::max<int64_t>(1, d.sample_whole(rng, scale));
}

// The stream of one turn of a session (turn -1: the session's own draws;
// turn -2: whether it is resumed, and its earlier life; turn -3: its class
// in a mix of traffic).
constexpr int64_t kSessionStream = -1;
constexpr int64_t kResumptionStream = -2;
constexpr int64_t kClassStream = -3;
uint64_t turn_key(uint64_t session_seed, int64_t turn) {
  return SplitMix64::mix(session_seed, static_cast<uint64_t>(turn));
}
SplitMix64 turn_stream(uint64_t session_seed, int64_t turn) {
  return SplitMix64(turn_key(session_seed, turn));
}

// A turn's draft-acceptance draws (Request::acceptance): apart from the
// draws of its tokens, which stay as they were without speculative decoding.
SplitMix64 acceptance_stream(uint64_t session_seed, int64_t turn) {
  constexpr uint64_t kAcceptance = 0x6163636570747321ULL;  // "accepts!"
  return SplitMix64(SplitMix64::mix(turn_key(session_seed, turn), kAcceptance));
}

// How long from `from` to `to`, in ms; NaN where the request never reached `to`.
double stage_ms(SimTime from, SimTime to, bool reached) {
  return reached ? (to - from).ms() : std::numeric_limits<double>::quiet_NaN();
}

RequestRecord record_of(const Request& r) {
  const bool routed = r.prefill_instance >= 0;
  const bool started = r.computed > 0 || r.generated > 0;
  const bool first = r.first_token() > SimTime();
  const bool done = r.generated >= r.output_tokens;
  const bool decoding = r.decode_started > SimTime();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  RequestRecord x;
  x.id = r.id;
  x.session = r.session;
  x.turn = r.turn;
  x.arrival_s = r.arrival.s();
  x.held_ms = r.held_s * 1e3;
  x.prefix_tokens = r.prefix_tokens;
  x.new_tokens = r.new_tokens;
  x.cached_tokens = r.cached_tokens;
  x.replay_tokens = r.replay_tokens;
  x.output_tokens = r.output_tokens;
  x.generated = r.generated;
  x.status = r.rejected != nullptr ? std::string("rejected: ") + r.rejected : done ? "finished" : "in flight";
  x.prefill_instance = r.prefill_instance;
  x.prefill_rank = r.attention_rank;
  x.context_parallel = r.context_parallel;
  x.decode_instance = r.decode_instance;
  x.decode_rank = r.decode_rank;
  x.ssd_read_ms = routed ? r.ssd_read_us / 1e3 : nan;
  x.prefill_wait_ms = stage_ms(r.prefill_queued, r.prefill_started, started && routed);
  x.ttft_ms = stage_ms(r.arrival, r.first_token(), first);
  x.transfer_ms = decoding ? r.transfer_us / 1e3 : nan;
  x.decode_wait_ms = stage_ms(r.decode_queued, r.decode_admitted, r.decode_admitted > SimTime());
  x.tpot_ms = done && r.output_tokens > 1
                  ? (r.finished - r.first_token()).ms() / static_cast<double>(r.output_tokens - 1)
                  : nan;
  x.max_itl_ms = r.last_chunk > SimTime() ? r.longest_chunk_gap.ms() : nan;
  x.e2e_ms = stage_ms(r.arrival, r.finished, done);
  return x;
}

}  // namespace

ServingSimulation::ServingSimulation(const ModelAnalysis& model, const KernelCostModel& prefill_cost,
                                     const KernelCostModel& decode_cost, const DeploymentSpec& deployment,
                                     const WorkloadSpec& workload, uint64_t seed)
    : ServingSimulation(model, prefill_cost, decode_cost, deployment, workload, seed,
                        std::make_shared<StepTimeCache>(
                            deployment_step_times(model, prefill_cost, decode_cost, deployment))) {}

ServingSimulation::ServingSimulation(const ModelAnalysis& model, const KernelCostModel& prefill_cost,
                                     const KernelCostModel& decode_cost, const DeploymentSpec& deployment,
                                     const WorkloadSpec& workload, uint64_t seed,
                                     std::shared_ptr<StepTimeCache> steps)
    : model_(model),
      prefill_gpu_(prefill_cost.gpu()),
      prefill_nvlink_bytes_per_s_(deployment.prefill.context_parallel_min_tokens > 0
                                      ? prefill_cost.gpu().nvlink_bytes_per_s.value() *
                                            prefill_cost.params().links.nvlink_efficiency.value()
                                      : 0.0),
      decode_gpu_(decode_cost.gpu()),
      prefill_nic_bytes_per_s_(prefill_cost.gpu().nic_bytes_per_s.value() *
                               prefill_cost.params().links.nic_efficiency.value()),
      decode_nic_bytes_per_s_(decode_cost.gpu().nic_bytes_per_s.value() *
                              decode_cost.params().links.nic_efficiency.value()),
      deployment_(deployment),
      workload_(workload),
      sim_(seed),
      arrivals_rng_(sim_.random_stream("arrivals")),
      sessions_rng_(sim_.random_stream("sessions")),
      trace_sessions_seed_(sim_.random_stream("trace sessions")()),
      steps_(std::move(steps)),
      tiers_(deployment.kv.retention_s, deployment.kv.host_ttl_s, 0) {
  if (model.spec.draft && model.spec.draft->acceptance.known())
    draft_acceptance_ = DraftAcceptance(model.spec.draft->acceptance.value(), model.spec.draft->block_size);
  class_chunk_gaps_.resize(workload.mix.size());
  // Decode ranks hold what the memory fit leaves for KV; the ranks that
  // prefill hold a chunk's activations in the reserve; the SWA pool, a share
  // of every node's DRAM, sits beside the model's host-resident weights.
  const PoolKvRoom room = servable_kv_room(model, deployment, prefill_gpu_, decode_gpu_);
  decode_kv_bytes_per_gpu_ = room.decode_bytes_per_gpu;
  prefill_kv_bytes_per_gpu_ = room.prefill_bytes_per_gpu;
  const double decode_nodes =
      static_cast<double>(deployment.decode.instances * deployment.decode.gpus_per_instance) /
      decode_gpu_.gpus_per_node.value();
  const double prefill_nodes =
      deployment.disaggregated
          ? static_cast<double>(deployment.prefill.instances * deployment.prefill.gpus_per_instance) /
                prefill_gpu_.gpus_per_node.value()
          : 0.0;
  const double pool_bytes = (decode_nodes * decode_gpu_.host_dram_bytes_per_node.value() +
                             prefill_nodes * prefill_gpu_.host_dram_bytes_per_node.value()) *
                            deployment.kv.host_pool_fraction;
  const auto state = static_cast<double>(std::max<int64_t>(1, model.kv.per_request_state_bytes()));
  tier_keeps_s_ = tier_keeps_s();
  tiers_ = SessionKvTiers(tier_keeps_s_, deployment.kv.host_ttl_s,
                          static_cast<int64_t>(std::floor(pool_bytes / state)));
  for (int64_t i = 0; i < deployment.prefill.instances; ++i) {
    engines_.push_back(std::make_unique<Engine>());
    prefill_.push_back(std::make_unique<PrefillInstance>());
    prefill_.back()->engine = engines_.back().get();
    prefill_.back()->index = static_cast<int>(i);
    prefill_.back()->ranks.resize(static_cast<std::size_t>(deployment.prefill.attention_ranks()));
    prefill_.back()->ssd_free_at.resize(static_cast<std::size_t>(
        (deployment.prefill.gpus_per_instance + prefill_gpus_per_node() - 1) / prefill_gpus_per_node()));
  }
  for (int64_t i = 0; i < deployment.decode.instances; ++i) {
    auto instance = std::make_unique<DecodeInstance>();
    instance->ranks.resize(static_cast<std::size_t>(deployment.decode.attention_ranks()));
    if (deployment.disaggregated) engines_.push_back(std::make_unique<Engine>());
    if (!deployment.disaggregated) {
      PrefillInstance& same_gpus = *prefill_[static_cast<std::size_t>(i)];
      instance->engine = same_gpus.engine;
      same_gpus.colocated = instance.get();
    } else {
      instance->engine = engines_.back().get();
    }
    decode_.push_back(std::move(instance));
  }
}

ServingSimulation::~ServingSimulation() = default;

// ---- arrivals ---------------------------------------------------------------

double ServingSimulation::arrival_rate_at(double time_s) const {
  if (workload_.arrival == WorkloadSpec::Arrival::kPoisson) return workload_.sessions_per_s;
  const double phase = std::fmod(time_s, workload_.burst_period_s) / workload_.burst_period_s;
  const double quiet = quiet_rate();
  return phase < workload_.burst_fraction ? quiet * workload_.burst_factor : quiet;
}

// Bursty: `burst_fraction` of each period at `burst_factor` times the quiet
// rate, scaled so the mean stays sessions_per_s.
double ServingSimulation::quiet_rate() const {
  const double f = workload_.burst_fraction;
  return workload_.sessions_per_s / (f * workload_.burst_factor + (1.0 - f));
}

void ServingSimulation::schedule_next_session() {
  // Thinning against the peak rate gives a non-homogeneous Poisson process
  // (a burst_factor below 1 makes the burst a lull, and the quiet rate the peak).
  const double peak = workload_.arrival == WorkloadSpec::Arrival::kPoisson
                          ? workload_.sessions_per_s
                          : quiet_rate() * std::max(1.0, workload_.burst_factor);
  double t = sim_.now().s();
  do {
    t += exponential(arrivals_rng_, 1.0 / peak);
    // No run lasts past this: an arrival there is never served (at a rate of 1e-300 one comes at infinity).
    if (!(t <= longest_run_s())) return;
  } while (uniform01(arrivals_rng_) * peak > arrival_rate_at(t));
  sim_.schedule_at(SimTime::from_s(t), [this] {
    if (!accepting_) return;
    start_session();
    schedule_next_session();
  });
}

void ServingSimulation::start_session() {
  const int64_t id = static_cast<int64_t>(sessions_.size());
  if (workload_.arrival == WorkloadSpec::Arrival::kClosedLoop) check_closed_loop_moves_on();
  // Sessions are created in arrival order, whatever the serving does.
  Session& s = sessions_.emplace_back(draw_session(sessions_rng_()));
  s.started = sim_.now();
  if (s.earlier_context > 0) {
    tiers_.store_earlier(id, s.earlier_context, sim_.now() - SimTime::from_s(s.resumed_after_s), sim_.now());
  }
  start_turn(id, s.earlier_context);
}

// A closed loop whose sessions are refused as they arrive would start new
// ones at one instant forever; nor may it start more than a run allows.
void ServingSimulation::check_closed_loop_moves_on() {
  // Times the concurrency: every session ended at once, then nine in ten of their successors refused.
  constexpr int64_t kStartsPerInstant = 10;
  if (sim_.now() != closed_loop_instant_) {
    closed_loop_instant_ = sim_.now();
    started_at_instant_ = 0;
  }
  if (++started_at_instant_ > kStartsPerInstant * workload_.concurrency) {
    throw InputError(
        workload_.concurrency_where,
        fmt::format("the closed loop of {} sessions at a time started {} at {:g} s of simulated "
                    "time without it moving on: its sessions are refused as they arrive ({})",
                    workload_.concurrency, started_at_instant_ - 1, sim_.now().s(), last_refusal_));
  }
  if (static_cast<double>(sessions_.size()) >= kMaxSessionsPerRun) {
    throw InputError(
        workload_.concurrency_where,
        fmt::format("the closed loop of {} sessions at a time started {:g} sessions by {:g} s of "
                    "simulated time, the most one run starts: shorten the run",
                    workload_.concurrency, kMaxSessionsPerRun, sim_.now().s()));
  }
}

void ServingSimulation::session_ended() {
  if (workload_.arrival != WorkloadSpec::Arrival::kClosedLoop) return;
  if (workload_.prompts > 0) {
    // A benchmark's prompts all sent: none follows, and its last to end ends the run.
    if (++loop_sessions_ended_ == workload_.prompts) {
      prompts_done_at_ = sim_.now();
      accepting_ = false;
    }
    if (static_cast<int64_t>(sessions_.size()) >= workload_.prompts) return;
  }
  // Scheduled, not called: a session refused as it arrives would otherwise
  // start the next one inside its own admission.
  sim_.schedule_at(sim_.now(), [this] {
    if (accepting_) start_session();
  });
}

int ServingSimulation::draw_class(uint64_t seed) const {
  if (workload_.mix.empty()) return -1;
  SplitMix64 rng = turn_stream(seed, kClassStream);
  double u = uniform01(rng);
  for (std::size_t i = 0; i + 1 < workload_.mix.size(); ++i) {
    if (u < workload_.mix[i].share) return static_cast<int>(i);
    u -= workload_.mix[i].share;
  }
  return static_cast<int>(workload_.mix.size()) - 1;
}

const WorkloadSpec& ServingSimulation::sessions_of(const Session& s) const {
  return s.traffic_class < 0 ? workload_ : workload_.mix[static_cast<std::size_t>(s.traffic_class)].sessions;
}

ServingSimulation::Session ServingSimulation::draw_session(uint64_t seed, int earlier_lives,
                                                           int traffic_class) const {
  Session s;
  s.seed = seed;
  // An earlier life is of its resumed session's class (given); a new session draws its own.
  s.traffic_class = traffic_class >= 0 ? traffic_class : draw_class(seed);
  const WorkloadSpec& shape = sessions_of(s);
  SplitMix64 rng = turn_stream(s.seed, kSessionStream);
  s.turns = draw_tokens(shape.turns, rng);
  const WorkloadSpec::Resumption& resumed = shape.resumed;
  if (earlier_lives <= 0 || resumed.fraction <= 0)
    return s;  // draws nothing: the other streams are the same either way
  SplitMix64 resumption = turn_stream(s.seed, kResumptionStream);
  if (uniform01(resumption) >= resumed.fraction) return s;
  s.resumed = true;
  s.resumed_after_s = resumed.gap_s.sample(resumption);
  // The earlier life is a session like any other: resumed itself, with the same odds.
  s.earlier_context = last_context(draw_session(resumption(), earlier_lives - 1, s.traffic_class));
  return s;
}

// The tier's LRU time (Che's approximation): the age t at which what the
// tier holds fills its capacity C, the least recently stored going first.
// By Little's law it holds sessions/s x the bytes each session leaves x t,
// less, for a resumed session, its earlier context from its gap on, where
// the gap comes first (that entry was replaced). Estimated before the run,
// so a turn's lookup can use it: the workload's mean rate and 4,096 sessions
// drawn apart from the run's own (a trace: its sessions, at its rate; a
// block-hashed one: the blocks each row adds).
double ServingSimulation::tier_keeps_s() const {
  const KvTierSpec& kv = deployment_.kv;
  if (!kv.ssd_capacity_tb || kv.retention_s <= 0) return kv.retention_s;
  if (workload_.arrival == WorkloadSpec::Arrival::kClosedLoop) {
    throw InputError(
        kv.ssd_capacity_tb->where(),
        fmt::format("a bounded SSD tier is sized by the sessions arriving per second, which the "
                    "closed loop '{}' leaves to the deployment's speed: expected unbounded, or an "
                    "open-loop workload",
                    workload_.name));
  }
  struct Left {  // what a session leaves in the tier, in tokens
    double context = 0;
    double earlier_context = 0;  // resumed: replaced after the gap
    double gap_s = 0;
  };
  std::vector<Left> left;
  if (workload_.arrival == WorkloadSpec::Arrival::kTrace) {
    std::map<int64_t, double> contexts;
    for (const WorkloadSpec::TraceRow& row : workload_.trace) {
      contexts[row.session] +=
          static_cast<double>(row.blocks.empty() ? row.input_tokens + row.output_tokens
                                                 : row.blocks_first_seen * workload_.trace_block_tokens);
    }
    for (const auto& [session, context] : contexts) left.push_back({context});
  } else {
    constexpr int kSessionsDrawn = 4096;
    std::mt19937_64 seeds = sim_.random_stream("ssd tier sizing");
    for (int i = 0; i < kSessionsDrawn; ++i) {
      const Session s = draw_session(seeds());
      left.push_back(
          {static_cast<double>(last_context(s)), static_cast<double>(s.earlier_context), s.resumed_after_s});
    }
  }
  const double sessions_per_s = workload_.sessions_per_s;  // a trace's: its sessions over its last row's time
  const auto held_bytes = [&](double t) {                  // grows with t: a later context is never shorter
    double token_s = 0;
    for (const Left& l : left) token_s += l.context * t - l.earlier_context * std::max(0.0, t - l.gap_s);
    return sessions_per_s * token_s / static_cast<double>(std::max<std::size_t>(1, left.size())) *
           model_.kv.global_bytes_per_token;
  };
  const double capacity = kv.ssd_capacity_tb->value() * 1e12;
  if (held_bytes(kv.retention_s) <= capacity) return kv.retention_s;
  double fits = 0, overflows = kv.retention_s;
  for (int i = 0; i < 100; ++i) {
    const double t = 0.5 * (fits + overflows);
    (held_bytes(t) > capacity ? overflows : fits) = t;
  }
  return fits;
}

Request& ServingSimulation::next_turn_request(int64_t session) {
  Session& s = sessions_[static_cast<std::size_t>(session)];
  Request& r = requests_.emplace_back();
  r.id = static_cast<int64_t>(requests_.size()) - 1;
  r.session = session;
  r.turn = s.next_turn++;
  r.arrival = sim_.now();
  r.acceptance = acceptance_stream(s.seed, r.turn);
  return r;
}

void ServingSimulation::start_turn(int64_t session, int64_t prefix_tokens) {
  Session& s = sessions_[static_cast<std::size_t>(session)];
  Request& r = next_turn_request(session);
  r.prefix_tokens = prefix_tokens;
  const TurnDraw turn = draw_turn(s, r.turn);
  r.new_tokens = turn.new_tokens;
  r.output_tokens = turn.output_tokens;
  r.think_after_s = turn.think_after_s;
  r.traffic_class = s.traffic_class;
  if (s.traffic_class >= 0) r.priority = workload_.mix[static_cast<std::size_t>(s.traffic_class)].priority;
  admit_turn(r);
}

ServingSimulation::TurnDraw ServingSimulation::draw_turn(const Session& s, int64_t turn) const {
  SplitMix64 rng = turn_stream(s.seed, turn);
  TurnDraw d;
  const WorkloadSpec& shape = sessions_of(s);
  const bool opening = turn == 0 && !s.resumed;  // a resumed session goes on from its earlier context
  d.new_tokens = draw_tokens(opening ? shape.first_input_tokens : shape.turn_input_tokens, rng);
  d.output_tokens = draw_tokens(shape.output_tokens, rng, shape.effort_output_multiplier.value());
  d.think_after_s = shape.think_time_s.sample(rng);
  return d;
}

bool ServingSimulation::arrived_in_window(const Session& s) const {
  return s.started >= window_start_ && !s.fills_closed_loop;
}

int64_t ServingSimulation::last_context(const Session& s) const {
  if (s.from_trace) return s.trace_new_block_tokens >= 0 ? s.trace_new_block_tokens : s.trace_context;
  if (s.ended_at_context >= 0) return s.ended_at_context;
  // The turns it will ask for, whether or not the run lasts that long; a turn
  // past the model's context is refused, and the session ends there.
  int64_t context = s.earlier_context;
  for (int64_t turn = 0; turn < s.turns; ++turn) {
    const TurnDraw d = draw_turn(s, turn);
    if (context + d.new_tokens + d.output_tokens > model_.spec.max_context) break;
    context += d.new_tokens + d.output_tokens;
  }
  return context;
}

void ServingSimulation::trace_row_comes(const WorkloadSpec::TraceRow& row) {
  const auto [it, added] = trace_sessions_.emplace(row.session, static_cast<int64_t>(sessions_.size()));
  if (added) {
    Session& s = sessions_.emplace_back();
    s.from_trace = true;
    s.started = sim_.now();
    s.seed = SplitMix64::mix(trace_sessions_seed_, static_cast<uint64_t>(row.session));
  }
  Session& s = sessions_[static_cast<std::size_t>(it->second)];
  if (s.trace_turn_underway) {
    s.trace_rows_held.push_back(&row);
    return;
  }
  start_trace_turn(it->second, row);
}

void ServingSimulation::trace_turn_ended(int64_t session) {
  Session& s = sessions_[static_cast<std::size_t>(session)];
  // (A drain sends held rows too: they came, by the trace's clock, in the
  // window; the window of arrivals then lasts until the last is sent.)
  if (s.trace_rows_held.empty()) {
    s.trace_turn_underway = false;
    return;
  }
  // Sent as an event of its own (the turn that ended may still be on the
  // stack); the session stays underway, so a row coming meanwhile queues behind.
  const WorkloadSpec::TraceRow* row = s.trace_rows_held.front();
  s.trace_rows_held.pop_front();
  sim_.schedule_after(SimTime(), [this, session, row] { start_trace_turn(session, *row); });
}

void ServingSimulation::start_trace_turn(int64_t session, const WorkloadSpec::TraceRow& row) {
  Session& s = sessions_[static_cast<std::size_t>(session)];
  s.trace_turn_underway = row.blocks.empty();  // a block-hashed row is a session of its own
  Request& r = next_turn_request(session);
  r.held_s = (sim_.now() - SimTime::from_s(row.time_s)).s();
  last_trace_turn_sent_ = sim_.now();
  if (r.held_s > 0 && in_window(r)) {
    ++result_.trace_turns_held;
    result_.trace_turns_held_s += r.held_s;
  }
  r.prefix_tokens = s.trace_context;
  r.new_tokens = row.input_tokens;
  r.output_tokens = row.output_tokens;
  s.trace_context = r.final_context();
  if (!row.blocks.empty()) {
    r.blocks = &row.blocks;
    s.trace_new_block_tokens = row.blocks_first_seen * workload_.trace_block_tokens;
    if (in_window(r)) {
      result_.input_tokens_shareable +=
          std::min(row.blocks_leading_seen * workload_.trace_block_tokens, row.input_tokens - 1);
    }
  }
  admit_turn(r);
}

void ServingSimulation::admit_turn(Request& r) {
  const int64_t session = r.session;
  const int64_t prefix_tokens = r.prefix_tokens;
  const bool counted = in_window(r);
  if (counted) {
    ++result_.arrived;
    result_.input_tokens_arrived += r.new_tokens;
  }
  change_in_system(+1);
  if (r.final_context() > model_.spec.max_context) {
    reject(r, "context exceeds the model's max_context");
    return;
  }
  const TierLookup hit = r.blocks != nullptr ? tiers_.lookup_blocks(*r.blocks, workload_.trace_block_tokens,
                                                                    r.context(), sim_.now())
                                             : tiers_.lookup(session, prefix_tokens, sim_.now());
  r.cached_tokens = hit.cached_tokens;
  Session& s = sessions_[static_cast<std::size_t>(session)];
  if (s.resumed && r.turn == 0) s.earlier_context_found = hit.cached_tokens > 0;
  if (hit.cached_tokens > 0 && !hit.swa_hit) {
    // Bounded replay recomputes only the last window to rebuild the SWA state
    // (approximately). An exact rebuild needs every layer's window of inputs,
    // which reach back one window per layer: num_layers x window tokens.
    const int64_t window = model_.spec.attention.sliding_window;
    const int64_t replay = deployment_.kv.bounded_replay ? window : window * model_.spec.num_layers;
    r.replay_tokens = std::min(replay, hit.cached_tokens);
  }
  r.to_compute = r.context() - r.cached_tokens + r.replay_tokens;
  if (counted) {
    result_.input_tokens_replayed += r.replay_tokens;
    result_.input_tokens_to_compute += r.to_compute;
    result_.input_tokens_cached += r.cached_tokens;
  }
  route_turn(r);
}

void ServingSimulation::reject(Request& r, const char* reason) {
  r.rejected = reason;
  last_refusal_ = reason;
  if (in_window(r)) {
    ++result_.rejected;
    ++result_.rejected_by_reason[reason];
  }
  change_in_system(-1);
  // The refused turn never ran: the session's context stays what it was.
  Session& s = sessions_[static_cast<std::size_t>(r.session)];
  if (s.from_trace) {
    s.trace_context = r.prefix_tokens;  // its later rows still come, on that prefix
    trace_turn_ended(r.session);
    return;
  }
  s.ended_at_context = r.prefix_tokens;
  tiers_.forget(r.session);
  session_ended();
}

// ---- bookkeeping ------------------------------------------------------------

int64_t ServingSimulation::prefill_gpus_per_node() const {
  return std::max<int64_t>(1, static_cast<int64_t>(prefill_gpu_.gpus_per_node.value()));
}

SimTime ServingSimulation::queue_for(SimTime& free_at, double seconds) {
  const SimTime start = std::max(free_at, sim_.now());
  free_at = start + SimTime::from_s(seconds);
  return free_at;
}

void ServingSimulation::log_step(StepRecord::Kind kind, bool prefill_pool, std::size_t instance,
                                 const std::vector<RankDecode>& decoding, const std::vector<int64_t>& drafts,
                                 const std::vector<PrefillChunk>& chunks, double us, double communication_us,
                                 int64_t micro_batches) {
  if (!log_steps_ || !measuring()) return;
  StepRecord& step = result_.steps.emplace_back();
  step.start_s = sim_.now().s();
  step.prefill_pool = prefill_pool;
  step.instance = static_cast<int>(instance);
  step.kind = kind;
  double context_sum = 0, drafts_sum = 0;
  for (std::size_t i = 0; i < decoding.size(); ++i) {
    const auto n = static_cast<double>(decoding[i].sequences);
    step.sequences += decoding[i].sequences;
    context_sum += n * static_cast<double>(decoding[i].history);
    if (i < drafts.size()) drafts_sum += n * static_cast<double>(drafts[i]);
  }
  if (step.sequences > 0) {
    step.decode_context = context_sum / static_cast<double>(step.sequences);
    step.drafts = drafts_sum / static_cast<double>(step.sequences);
  }
  double end_sum = 0;
  for (const PrefillChunk& c : chunks) {
    const Request& r = *c.request;
    ++step.prompts;
    step.prompt_tokens += c.tokens;
    end_sum += static_cast<double>(r.context() - r.to_compute + r.computed + c.tokens);
  }
  if (step.prompts > 0) step.prompt_context = end_sum / static_cast<double>(step.prompts);
  step.step_ms = us / 1e3;
  step.communication_ms = communication_us / 1e3;
  step.micro_batches = micro_batches;
}

void ServingSimulation::trace_span(TraceSpan::Kind kind, int64_t instance, SimTime start, SimTime end,
                                   int64_t size) {
  if (start < window_start_ || start >= window_start_ + trace_seconds_) return;
  result_.trace.push_back({kind, instance, start.us(), (end - start).us(), size});
}

void ServingSimulation::change_in_system(int delta) {
  const SimTime from = std::max(last_change_, window_start_);
  if (sim_.now() > from) {
    in_system_area_ += static_cast<double>(in_system_) * (sim_.now() - from).s();
    add_in_system_by_slice(from, sim_.now());
  }
  last_change_ = sim_.now();
  in_system_ += delta;
}

void ServingSimulation::credit_output_tokens(const Request& r, int64_t tokens) {
  if (counts_tokens_of(r)) result_.output_tokens_generated += tokens;
}

void ServingSimulation::add_in_system_by_slice(SimTime from, SimTime to) {
  const double start = (from - window_start_).s();
  const double end = (to - window_start_).s();
  const auto first = static_cast<std::size_t>(start / slice_s_);
  for (std::size_t i = first; i < in_system_by_slice_.size(); ++i) {
    const double lo = std::max(start, static_cast<double>(i) * slice_s_);
    const double hi = std::min(end, static_cast<double>(i + 1) * slice_s_);
    if (hi <= lo) break;
    in_system_by_slice_[i] += static_cast<double>(in_system_) * (hi - lo);
  }
}

void ServingSimulation::sample_occupancy() {
  OccupancySample s;
  s.time_s = sim_.now().s();
  double used = 0;
  double prefill_used = 0;
  for (const auto& p : prefill_) {
    s.prefill_queue += static_cast<int64_t>(p->queue.size());
    for (const PrefillRank& rank : p->ranks) prefill_used += rank.kv_used;
  }
  if (prefill_kv_bytes_per_gpu_ > 0) {
    s.prefill_kv_used_fraction =
        prefill_used / (prefill_kv_bytes_per_gpu_ * static_cast<double>(prefill_.size()) *
                        static_cast<double>(deployment_.prefill.attention_ranks()));
  }
  for (const auto& d : decode_) {
    s.decode_queue += static_cast<int64_t>(d->queue.size());
    for (const DecodeRank& rank : d->ranks) {
      used += rank.kv_used;
      s.decoding += static_cast<int64_t>(rank.active.size());
    }
  }
  // A rank's GPUs each hold its whole KV: a rank keeps one GPU's room.
  const double capacity =
      decode_kv_bytes_per_gpu_ *
      static_cast<double>(deployment_.decode.instances * deployment_.decode.attention_ranks());
  s.decode_kv_used_fraction = used / capacity;
  s.host_pool_sessions = tiers_.host_pool_sessions_used();
  result_.occupancy.push_back(s);
  if (!accepting_) return;
  // At least a tick apart: a run of 1e-300 s would sample at one instant forever.
  const SimTime interval = std::max(SimTime::from_s(occupancy_interval_s_), SimTime::from_ps(1));
  sim_.schedule_after(interval, [this] { sample_occupancy(); });
}

ServingResult ServingSimulation::run(double duration_s, bool drain) {
  const double warm_up_s = window_start_.s();
  check_sessions_asked(workload_, warm_up_s + duration_s);
  drain_ = drain;
  if (workload_.arrival == WorkloadSpec::Arrival::kTrace && !workload_.trace.empty()) {
    const double last_s = workload_.trace.back().time_s;
    if (warm_up_s > 0 && last_s <= warm_up_s) {
      throw InputError({"", 0, "--warm-up"},
                       fmt::format("the trace's last row comes at {:g} s: a warm-up of {:g} s leaves no "
                                   "arrival to measure (expected a warm-up shorter than the trace)",
                                   last_s, warm_up_s));
    }
    // Drained, a trace's arrival window ends with its last row: one past it
    // would count idle time in every rate and $ figure (a trace of rows at time
    // 0 alone keeps the window asked). Not drained, the run goes on to the time
    // asked, serving what the trace brought.
    if (drain && last_s > 0 && last_s < warm_up_s + duration_s) {
      duration_s = last_s - warm_up_s;
      result_.window_ends_with_trace = true;
    }
  }
  result_.replays_trace = workload_.arrival == WorkloadSpec::Arrival::kTrace;
  const double end_s = warm_up_s + duration_s;
  occupancy_interval_s_ = end_s / kOccupancySamples;
  slice_s_ = duration_s / kSteadyStateSlices;
  in_system_by_slice_.assign(static_cast<std::size_t>(kSteadyStateSlices), 0.0);
  if (workload_.arrival == WorkloadSpec::Arrival::kTrace) {
    for (const WorkloadSpec::TraceRow& row : workload_.trace) {
      if (row.time_s > end_s) break;
      sim_.schedule_at(SimTime::from_s(row.time_s), [this, &row] { trace_row_comes(row); });
    }
  } else if (workload_.arrival == WorkloadSpec::Arrival::kClosedLoop) {
    sim_.schedule_at(SimTime(), [this] {
      const int64_t first =
          workload_.prompts > 0 ? std::min(workload_.concurrency, workload_.prompts) : workload_.concurrency;
      for (int64_t i = 0; i < first; ++i) {
        start_session();
        sessions_.back().fills_closed_loop = true;
      }
    });
  } else {
    schedule_next_session();
  }
  // The tiers' hits and misses from here on are the window's.
  if (warm_up_s > 0) sim_.schedule_at(window_start_, [this] { tiers_at_window_start_ = tiers_.counters(); });
  sim_.schedule_at(SimTime(), [this] { sample_occupancy(); });
  try {
    sim_.run_until(SimTime::from_s(end_s));
    change_in_system(0);
    if (drain) {
      accepting_ = false;
      sim_.run_until(SimTime::max());
      change_in_system(0);
      // A trace's rows held past the window's end for their session's
      // previous answer arrived late: the window of arrivals ends at the last.
      if (last_trace_turn_sent_ > SimTime::from_s(end_s))
        duration_s = (last_trace_turn_sent_ - window_start_).s();
    }
    if (prompts_done_at_) duration_s = benchmark_window_s(*prompts_done_at_);
  } catch (const std::out_of_range& e) {
    // Only figures off by orders of magnitude make a step or a transfer outlast simulated time.
    throw InputError({deployment_.file, 0, ""},
                     fmt::format("{}: a step or a transfer of this deployment would outlast it; is a rate in "
                                 "its GPU profiles, the kernel-model calibration or the deployment off by "
                                 "orders of magnitude?",
                                 e.what()));
  }
  return collect(duration_s);
}

double ServingSimulation::benchmark_window_s(SimTime prompts_done) {
  if (prompts_done == SimTime()) {  // no request ends at 0 s unless refused as it arrives
    throw InputError(
        workload_.prompts_where,
        fmt::format("the closed loop's {} prompts were all refused as they arrived, at 0 s ({}): "
                    "nothing was served to measure",
                    workload_.prompts, last_refusal_));
  }
  if (prompts_done <= window_start_) {
    throw InputError(workload_.prompts_where,
                     fmt::format("the closed loop's {} prompts all ended by {:g} s, within the warm-up of "
                                 "{:g} s: nothing is left to measure (expected more prompts, or --warm-up 0 "
                                 "to measure the benchmark from its start)",
                                 workload_.prompts, prompts_done.s(), window_start_.s()));
  }
  result_.window_ends_with_prompts = true;
  return (prompts_done - window_start_).s();
}

ServingSimulation::FinishedTimes ServingSimulation::finished_times(const Request& r) const {
  FinishedTimes t;
  t.ttft_ms = (r.first_token() - r.arrival).ms();
  t.tpot_ms = r.output_tokens > 1
                  ? (r.finished - r.first_token()).ms() / static_cast<double>(r.output_tokens - 1)
                  : 0.0;
  t.longest_itl_ms = r.longest_chunk_gap.ms();
  t.missed = sla_of(r).missed(t.ttft_ms, t.tpot_ms, t.longest_itl_ms);
  return t;
}

SlaSpec ServingSimulation::sla_of(const Request& r) const {
  const int c = sessions_[static_cast<std::size_t>(r.session)].traffic_class;
  if (c < 0) return deployment_.sla;
  return held_to(deployment_.sla, workload_.mix[static_cast<std::size_t>(c)].sla);
}

std::vector<ClassOutcome> ServingSimulation::class_outcomes() const {
  std::vector<ClassOutcome> out(workload_.mix.size());
  std::vector<std::vector<double>> ttft(out.size()), tpot(out.size()), longest_itl(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].name = workload_.mix[i].name;
    out[i].sla = held_to(deployment_.sla, workload_.mix[i].sla);
  }
  for (const Session& s : sessions_) {
    if (s.traffic_class >= 0 && s.started >= window_start_)
      ++out[static_cast<std::size_t>(s.traffic_class)].sessions;
  }
  for (const Request& r : requests_) {
    const int c = sessions_[static_cast<std::size_t>(r.session)].traffic_class;
    if (c < 0 || !in_window(r)) continue;
    ClassOutcome& o = out[static_cast<std::size_t>(c)];
    ++o.arrived;
    if (r.generated < r.output_tokens) continue;  // in flight or rejected
    ++o.finished;
    const FinishedTimes t = finished_times(r);
    ttft[static_cast<std::size_t>(c)].push_back(t.ttft_ms);
    if (r.output_tokens > 1) {
      tpot[static_cast<std::size_t>(c)].push_back(t.tpot_ms);
      longest_itl[static_cast<std::size_t>(c)].push_back(t.longest_itl_ms);
    }
    o.within_sla += t.within_sla() ? 1 : 0;
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].ttft_ms = summarize(ttft[i]);
    out[i].tpot_ms = summarize(tpot[i]);
    out[i].itl_ms = class_chunk_gaps_[i].summary_ms();
    out[i].longest_itl_ms = summarize(longest_itl[i]);
  }
  return out;
}

ServingResult ServingSimulation::collect(double duration_s) {
  ServingResult& out = result_;
  out.warm_up_s = window_start_.s();
  out.duration_s = duration_s;
  for (double& request_seconds : in_system_by_slice_) request_seconds /= slice_s_;  // the slice's mean
  // A window the benchmark's last prompt ended early keeps the slices it
  // reached, the last one's mean over the part of it that was measured.
  const double reached = std::ceil(duration_s / slice_s_);
  if (result_.window_ends_with_prompts && reached >= 1 &&
      reached < static_cast<double>(in_system_by_slice_.size())) {
    in_system_by_slice_.resize(static_cast<std::size_t>(reached));
    in_system_by_slice_.back() *= slice_s_ / (duration_s - (reached - 1) * slice_s_);
  }
  out.steady_state = mser5(in_system_by_slice_);
  out.gpus = deployment_.total_gpus();
  out.in_flight = out.arrived - out.finished - out.rejected;
  for (const Session& s : sessions_)
    out.trace_turns_still_held += static_cast<int64_t>(s.trace_rows_held.size());
  out.prefill_band = prefill_band_.mixed();
  out.decode_band = decode_band_.mixed();
  if (decode_time_us_ > 0) out.decode_rank_imbalance = imbalance_time_us_ / decode_time_us_;
  collect_finished_requests(duration_s);
  std::size_t clients = 0;
  for (const auto& p : prefill_) clients += p->ssd_free_at.size();
  out.ssd_clients_busy_fraction = ssd_read_seconds_ / (duration_s * static_cast<double>(clients));
  const double gpu_seconds = duration_s * static_cast<double>(out.gpus);
  out.input_tokens_per_s_per_gpu = static_cast<double>(out.input_tokens_prefilled) / gpu_seconds;
  out.output_tokens_per_s_per_gpu = static_cast<double>(out.output_tokens_generated) / gpu_seconds;
  out.mean_in_system = in_system_area_ / duration_s;
  out.arrival_rate_per_s = static_cast<double>(out.arrived) / duration_s;
  out.kv_tiers = tiers_.counters() - tiers_at_window_start_;
  if (log_requests_) collect_request_records();
  out.sessions_arrived = std::count_if(sessions_.begin(), sessions_.end(),
                                       [this](const Session& s) { return arrived_in_window(s); });
  out.by_class = class_outcomes();
  collect_session_retention();
  out.decode_kv_bytes_per_gpu = decode_kv_bytes_per_gpu_;
  out.events = sim_.events_processed();
  out.step_shapes_costed = steps_->size();
  return out;
}

void ServingSimulation::collect_finished_requests(double duration_s) {
  ServingResult& out = result_;
  std::vector<double> ttft, tpot, longest_itl, e2e, prefill_wait, decode_wait;
  double ssd = 0, prefill = 0, transfer = 0, decode = 0, sojourn = 0, communication = 0;
  int64_t good = 0;
  for (const Request& r : requests_) {
    if (!in_window(r) || r.generated < r.output_tokens) continue;  // warm-up, in flight or rejected
    const FinishedTimes t = finished_times(r);
    ttft.push_back(t.ttft_ms);
    if (r.output_tokens > 1) {
      tpot.push_back(t.tpot_ms);
      longest_itl.push_back(t.longest_itl_ms);
    }
    e2e.push_back((r.finished - r.arrival).ms());
    prefill_wait.push_back((r.prefill_started - r.prefill_queued).ms());
    if (r.output_tokens > 1) decode_wait.push_back((r.decode_admitted - r.decode_queued).ms());
    ssd += r.ssd_read_us / 1e3;
    prefill += (r.prefilled - r.prefill_started).ms();
    transfer += r.transfer_us / 1e3;
    if (r.output_tokens > 1) decode += (r.finished - r.decode_started).ms();
    sojourn += (r.finished - r.arrival).s();
    communication += r.communication_us / 1e3;
    good += t.within_sla() ? 1 : 0;
    out.sla_misses.ttft += t.missed.ttft ? 1 : 0;
    out.sla_misses.tpot += t.missed.tpot ? 1 : 0;
    out.sla_misses.itl += t.missed.itl ? 1 : 0;
  }
  out.sla_misses.unfinished = out.arrived - out.finished;
  const double n = std::max<double>(1.0, static_cast<double>(e2e.size()));
  out.ttft_ms = summarize(ttft);
  out.tpot_ms = summarize(tpot);
  out.itl_ms = chunk_gaps_.summary_ms();
  out.longest_itl_ms = summarize(longest_itl);
  out.e2e_ms = summarize(e2e);
  out.prefill_wait_ms = summarize(prefill_wait);
  out.decode_wait_ms = summarize(decode_wait);
  out.mean_ssd_read_ms = ssd / n;
  out.mean_prefill_ms = prefill / n;
  out.mean_transfer_ms = transfer / n;
  out.mean_decode_ms = decode / n;
  out.mean_communication_ms = communication / n;
  out.mean_sojourn_s = sojourn / n;
  out.goodput_requests_per_s = static_cast<double>(good) / duration_s;
  out.goodput_fraction = static_cast<double>(good) / n;
}

void ServingSimulation::collect_request_records() {
  ServingResult& out = result_;
  out.requests.reserve(requests_.size());
  for (const Request& r : requests_) {
    RequestRecord& record = out.requests.emplace_back(record_of(r));
    const int c = sessions_[static_cast<std::size_t>(r.session)].traffic_class;
    if (c >= 0) record.traffic_class = workload_.mix[static_cast<std::size_t>(c)].name;
    record.within_sla = r.generated >= r.output_tokens && finished_times(r).within_sla();
    record.measured = in_window(r);
  }
}

// Each session's last context stays as long as the tier keeps it, but an
// earlier life a resumed session found there stayed only until it came back
// (its entry replaced then): token-weighted, the mean time a context is held.
void ServingSimulation::collect_session_retention() {
  ServingResult& out = result_;
  double persisted = 0, held_token_s = 0;
  for (const Session& s : sessions_) {
    if (!arrived_in_window(s)) continue;
    const auto context = static_cast<double>(last_context(s));
    persisted += context;
    held_token_s += context * tier_keeps_s_;
    if (!s.resumed) continue;
    ++out.sessions_resumed;
    if (!s.earlier_context_found) continue;
    ++out.resumed_found;
    held_token_s -= static_cast<double>(s.earlier_context) * std::max(0.0, tier_keeps_s_ - s.resumed_after_s);
  }
  out.mean_last_context_tokens =
      out.sessions_arrived == 0 ? 0.0 : persisted / static_cast<double>(out.sessions_arrived);
  out.mean_hold_s = persisted > 0 ? held_token_s / persisted : tier_keeps_s_;
  out.tier_keeps_s = tier_keeps_s_;
  out.persisted_bytes_per_session = out.mean_last_context_tokens * model_.kv.global_bytes_per_token;
}

}  // namespace v41sim
