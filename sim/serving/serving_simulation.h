// ServingSimulation: a deployment under a workload, event by event.
//
// Request lifecycle: session turn arrives -> KV-tier lookup (global KV in the
// SSD tier, SWA state in the host pool) -> routing to one rank of a prefill
// instance -> SSD read through its node's client -> the rank's queue ->
// chunked prefill steps on that rank (data-parallel
// attention: each rank packs its own prompts up to its token budget; the
// slowest rank sets the step, as EP synchronises them)
// -> first token -> decode admission (a request waits until a rank has a
// batch slot and KV room for its final context, as engines allocate decode KV
// before the prefill side sends it; an aggregated deployment takes both before
// the prompt's first chunk) -> KV transfer, NIC to NIC, from the prefill GPU
// that holds it to the decode GPU ->
// continuous-batching decode steps -> finish -> the session's next turn after
// its think time. Step times come from the kernel model via StepTimeCache.
// An aggregated deployment prefills on its decode instances (no KV transfer),
// in steps of their own or mixed into decode steps (DeploymentSpec::aggregated_steps).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/des/simulator.h"
#include "sim/hw/gpu_profile.h"
#include "sim/metrics/gap_histogram.h"
#include "sim/model/model_analysis.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/draft_acceptance.h"
#include "sim/serving/kv_tiers.h"
#include "sim/serving/request.h"
#include "sim/serving/serving_result.h"
#include "sim/serving/step_time_cache.h"
#include "sim/serving/workload_spec.h"

namespace v41sim {

class ServingSimulation {
 public:
  // The cost models refer to each pool's GPU profile (the same one unless the
  // deployment gives the pools different GPUs).
  ServingSimulation(const ModelAnalysis& model, const KernelCostModel& prefill_cost,
                    const KernelCostModel& decode_cost, const DeploymentSpec& deployment,
                    const WorkloadSpec& workload, uint64_t seed);
  // Runs of one deployment may share its step times (deployment_step_times
  // over the same cost models): a shape costed by one is not costed again.
  ServingSimulation(const ModelAnalysis& model, const KernelCostModel& prefill_cost,
                    const KernelCostModel& decode_cost, const DeploymentSpec& deployment,
                    const WorkloadSpec& workload, uint64_t seed, std::shared_ptr<StepTimeCache> steps);
  ~ServingSimulation();

  // Simulates `duration_s` seconds of arrivals (after the warm-up, if any).
  // With `drain`, no session starts or continues after that, and the run goes
  // on until every request is done.
  ServingResult run(double duration_s, bool drain = false);
  // The first `seconds` of arrivals build the deployment up from empty and
  // are served but not measured: the run's figures count the window after
  // them (ServingResult::warm_up_s says how each figure is counted).
  void set_warm_up(double seconds) { window_start_ = SimTime::from_s(seconds); }
  // Records step and request spans that start in the first `seconds` of the
  // measured window (after the warm-up), for the trace.
  void enable_trace(double seconds) { trace_seconds_ = SimTime::from_s(seconds); }
  // Keep a record of every request in the result (ServingResult::requests).
  void enable_request_log() { log_requests_ = true; }
  // Keep a record of every step of the measured window (ServingResult::steps).
  void enable_step_log() { log_steps_ = true; }

  // A resumed session's earlier lives go back at most this many generations:
  // past a few, the model's context has long been reached, and with every
  // session resumed the chain must end somewhere.
  static constexpr int kEarlierLives = 8;

 private:
  struct Session;
  struct Engine;
  struct PrefillRank;
  struct PrefillInstance;
  struct DecodeRank;
  struct DecodeInstance;

  // Arrivals and sessions.
  void schedule_next_session();
  void start_session();
  // A session ended (its last turn done, or a turn refused): a closed loop
  // starts the next one at once.
  void session_ended();
  void check_closed_loop_moves_on();
  // The measured window of a closed loop whose prompts all ended at
  // `prompts_done`: from the warm-up's end to then (InputError if they all
  // ended in the warm-up).
  double benchmark_window_s(SimTime prompts_done);
  double arrival_rate_at(double time_s) const;
  double quiet_rate() const;  // bursty: outside the bursts
  // A session as its seed draws it: its turns and, with the workload's odds,
  // an earlier life it resumes after a gap, drawn from a stream of its own
  // (that life's context is its first prefix). The earlier life may be
  // resumed in turn, up to `earlier_lives` generations back.
  Session draw_session(uint64_t seed, int earlier_lives = kEarlierLives, int traffic_class = -1) const;
  // A session's class in a mix of traffic, drawn from its seed by the
  // classes' shares (-1: no mix); and the workload its turns are drawn from.
  int draw_class(uint64_t seed) const;
  const WorkloadSpec& sessions_of(const Session& s) const;
  // How long the SSD tier keeps a context: its retention, or less where its
  // capacity fills first (KvTierSpec::ssd_capacity_tb).
  double tier_keeps_s() const;
  void start_turn(int64_t session, int64_t prefix_tokens);
  // A new request for the session's next turn, arriving now.
  Request& next_turn_request(int64_t session);
  // What a session's turn asks: drawn from the session's stream for that turn.
  struct TurnDraw {
    int64_t new_tokens = 0;
    int64_t output_tokens = 0;
    double think_after_s = 0;
  };
  TurnDraw draw_turn(const Session& s, int64_t turn) const;
  // The context after the session's last turn, what the SSD tier keeps the
  // global KV of for its retention time once the session is done.
  int64_t last_context(const Session& s) const;
  // A session that arrived in the measured window, counted in the SSD tier's
  // inflow (a closed loop's first fill is its population, not an arrival).
  bool arrived_in_window(const Session& s) const;
  // A trace's row at its time: its session's next turn, sent at once, or
  // held until the turn underway ends (Session::trace_rows_held).
  void trace_row_comes(const WorkloadSpec::TraceRow& row);
  void start_trace_turn(int64_t session, const WorkloadSpec::TraceRow& row);
  void trace_turn_ended(int64_t session);
  // The tokens of a turn: drawn from the workload's distributions, or given by a trace.
  void admit_turn(Request& r);
  void reject(Request& r, const char* reason);
  // Prefill. A turn is routed on arrival (it counts in its rank's load from
  // then on), reads its cached prefix from the SSD tier through its rank's
  // node's client, then joins its rank's queue.
  void route_turn(Request& r);
  void enqueue_prefill(Request& r);
  // Where a prompt goes: its instance and that instance's rank (DeploymentSpec::routing).
  std::pair<std::size_t, std::size_t> route_prompt();
  // What routing compares between instances, then between the ranks of the
  // one chosen (the least takes the prompt).
  double routing_load(const PrefillInstance& instance) const;
  double rank_load(const PrefillInstance& instance, std::size_t rank) const;
  void try_start_prefill(std::size_t instance);
  // Aggregated, with a prefill delay (SGLang's prefill delayer): while some
  // ranks have prompts waiting and others none, a decode step runs instead,
  // up to DeploymentSpec::prefill_delay_steps in a row, so that the other
  // ranks' prompts can join one prompt step. True where it holds them now.
  bool holds_prompts_for_other_ranks(PrefillInstance& instance);
  struct PrefillChunk {
    Request* request;
    int64_t tokens;
  };
  // One rank's share of a step's prompts: its queued prompts in order, one
  // chunk each, up to `budget` tokens. The mean chunk, the mean context
  // it ends at and the chunks that do not end their prompt give the step's shape.
  struct RankChunks {
    int64_t prompts = 0;
    int64_t mean_new_tokens = 0;
    int64_t mean_context = 0;
    int64_t continuing = 0;
    int64_t tokens = 0;  // new tokens over its chunks
  };
  RankChunks pack_chunks(PrefillInstance& instance, std::size_t rank, int64_t budget,
                         std::vector<PrefillChunk>* chunks);
  // A step's tokens over the EP group's ranks, rounded up: the experts' rows
  // follow the group's tokens, not the slowest rank's own batch
  // (StepShape::expert_token_share).
  static int64_t per_rank(int64_t group_tokens, std::size_t ranks);
  // Aggregated: a prompt holds KV room and a batch slot for its final context
  // on its attention rank of the colocated decode instance from its first
  // chunk on; false while that rank lacks either (it waits for its own rank,
  // as a data-parallel rank's scheduler has its own KV pool).
  bool hold_kv(PrefillInstance& instance, Request& r);
  // Disaggregated: a prompt's KV stays on its attention rank of its prefill
  // instance from its first chunk until its transfer to decode ends (or it
  // finishes there); false while that rank's KV memory is full. Release gives
  // the room back (the caller starts the instance's next step where it may be
  // waiting for it).
  bool hold_prefill_kv(PrefillInstance& instance, Request& r);
  // A prompt prefilled context-parallel: each rank's attention reads every
  // earlier slice, so the ranks gather its KV. Disaggregated, every rank holds
  // it from its first such step until it is shipped; aggregated
  // (hold_gathered_copies), its own rank holds its final context as hold_kv
  // does and every other rank a copy of the prompt until it is prefilled.
  // False while any rank lacks the room.
  bool hold_context_parallel_kv(PrefillInstance& instance, Request& r);
  bool hold_gathered_copies(PrefillInstance& instance, Request& r);
  void release_prefill_kv(Request& r);
  // The prefill rank a routed prompt was given.
  PrefillRank& prefill_rank_of(const Request& r);
  // Aggregated: a prompt done with prefill takes its held slot in the batch
  // (or, with nothing left to generate, gives its KV back).
  void start_decoding_held(DecodeInstance& instance, Request& r);
  // Credits each chunk; a prompt done emits its first token and goes to decode.
  void complete_prefill_chunks(std::size_t instance, const std::vector<PrefillChunk>& chunks,
                               double communication_us);
  // One prompt sliced over every rank of the instance (context parallelism).
  void start_context_parallel_step(std::size_t instance, Request& r);
  // A rank's decode in a step: its sequences, their mean history and its
  // plain step (the drafts its own batch verifies); no sequences where it
  // does not decode. Looked up once a step, then timed in its group.
  struct RankDecode {
    int64_t sequences = 0;
    int64_t history = 0;
    StepTimeCache::DecodeStep plain;
    int64_t positions() const { return sequences * (1 + plain.drafts); }  // each verified, drafts included
  };
  // Each rank of `instance`, those marked in `prompting` (empty: none) not decoding.
  std::vector<RankDecode> rank_decodes(const DecodeInstance& instance, const std::vector<bool>& prompting);
  // Every position the decoding ranks verify (their sequences, each with its
  // drafts): with the prompt tokens, the group's tokens the experts take.
  static int64_t decoding_positions(const std::vector<RankDecode>& ranks);
  // The decoding ranks' steps in their group (StepTimeCache::decode_in_group:
  // their experts on the group's `group_tokens_per_rank`). A plain decode
  // step; or, aggregated with prompts first, the ranks of the colocated decode
  // instance with no prompt chunk in a prompt step, which run their decode
  // batch inside it as data-parallel attention lets them (SGLang: the ranks
  // step together through the experts, each with its own batch; a rank with a
  // chunk has its decode wait): `beside_prompts`, timed as the engine runs
  // them there (launched, normal-mode transfers). Each rank's tokens per
  // sequence (0: no decode) and the slowest rank's step (0 us: none), which
  // sets a decode step and may set a prompt step (the run counts those,
  // ServingResult::prefill_steps_set_by_decode).
  struct GroupDecode {
    std::vector<int64_t> drafts;  // each rank's draft tokens verified per sequence
    StepTimeCache::StepCost slowest;
  };
  GroupDecode decode_in_group(const std::vector<RankDecode>& ranks, int64_t group_tokens_per_rank,
                              bool beside_prompts);
  // What a step emits on each rank of a decode instance: the rank's first
  // `sequences` (those active when the step began) each emit their token
  // and the rank's `drafts` it accepted, and are credited the step's
  // communication. A sequence that joined the rank while the step ran (its KV
  // arrived) was not in it, and waits for the next.
  struct DecodeCredit {
    std::vector<int64_t> drafts;
    std::vector<std::size_t> sequences;
  };
  static DecodeCredit credit_at_step_start(const DecodeInstance& instance, std::vector<int64_t> drafts);
  // Of `drafts` draft tokens a sequence verified, how many its step accepts:
  // each position with the draft's acceptance, given the ones before it were
  // (the model's per-position assumption), drawn from the request's own stream.
  int64_t accepted_drafts(Request& r, int64_t drafts) const;
  // Runs the step, then credits the decode beside it (`decode_credit`, empty
  // for none) and each chunk, and hands finished prompts on.
  void run_prefill_step(std::size_t instance, std::vector<PrefillChunk> chunks,
                        const StepTimeCache::StepCost& step, DecodeCredit decode_credit);
  // Decode.
  // Disaggregated: a prompt done with prefill waits for room on the decode
  // instance its routing picks, then takes the rank its routing picks of
  // those with room; its KV is shipped once it has room.
  void enqueue_decode(Request& r);
  // A decode instance's or rank's load, as the deployment's routing counts it.
  double decode_load(const DecodeInstance& instance) const;
  double decode_load(const DecodeRank& rank) const;
  void ship_kv(std::size_t instance, DecodeRank& rank, Request& r);
  void next_step(std::size_t instance);  // aggregated only
  void try_admit(std::size_t instance);
  void admit_at_given_ranks(
      std::size_t instance);  // round robin: each request waits at the rank it was given
  // A decode rank takes the request's KV room and batch slot; its KV is shipped.
  void admit(std::size_t instance, std::size_t rank, Request& r);
  void try_start_decode(std::size_t instance);
  // Credits the sequences a step ran (DecodeCredit); finished ones leave.
  void stream_chunk(Request& r);
  void emit_decode_tokens(std::size_t instance, const DecodeCredit& credit, double communication_us);
  // Aggregated, mixed: decode steps that carry the waiting prompts' chunks.
  void try_start_mixed_step(std::size_t instance);
  StepTimeCache::DecodeStep rank_mixed_step(const RankDecode& decode, const RankChunks& chunks,
                                            int64_t group_tokens_per_rank, bool group_has_chunks);
  void finish(Request& r);
  // Bookkeeping.
  // A decode step's rank imbalance (ServingResult::decode_rank_imbalance), by step time.
  void add_decode_imbalance(const DecodeInstance& instance, double step_us);
  void change_in_system(int delta);
  // The measured window (set_warm_up). Requests count in it by arrival;
  // steps, reads and time in the system by when they happen; tokens by when
  // they are produced, and in a drained run only those of requests that
  // arrived in it (the run serves them to the end, and the tokens of requests
  // the warm-up left in flight would be counted on top).
  bool measuring() const { return sim_.now() >= window_start_; }
  bool in_window(const Request& r) const { return r.arrival >= window_start_; }
  bool counts_tokens_of(const Request& r) const { return measuring() && (!drain_ || in_window(r)); }
  void credit_output_tokens(const Request& r, int64_t tokens);
  void add_in_system_by_slice(SimTime from, SimTime to);  // in_system_ from `from` to `to`
  void sample_occupancy();
  ServingResult collect(double duration_s);
  // collect's parts: the measured window's finished requests (latencies, means,
  // goodput); every request's record (where asked); the sessions' last contexts
  // and how long the SSD tier holds them.
  void collect_finished_requests(double duration_s);
  void collect_request_records();
  void collect_session_retention();
  // A finished request's TTFT and TPOT (0 for a one-token answer), and whether both are within its SLA.
  struct FinishedTimes {
    double ttft_ms = 0;
    double tpot_ms = 0;
    double longest_itl_ms = 0;  // its longest gap between streamed chunks (0: one token, no gap)
    SlaSpec::Missed missed;     // the limits it passed over
    bool within_sla() const { return !missed.any(); }
  };
  FinishedTimes finished_times(const Request& r) const;
  SlaSpec sla_of(const Request& r) const;  // its class's limits in a mix, else the deployment's
  // Each class of a mix of traffic: its requests, what finished, within the SLA, its latencies.
  std::vector<ClassOutcome> class_outcomes() const;

  const ModelAnalysis& model_;
  const GpuProfile& prefill_gpu_;
  double prefill_nvlink_bytes_per_s_ = 0;  // achievable, per GPU and direction (context-parallel KV exchange)
  const GpuProfile& decode_gpu_;
  // Each GPU's NIC, achievable (bytes/s, one direction: the profile's line
  // rate times the calibration's links.nic_efficiency).
  double prefill_nic_bytes_per_s_ = 0;
  double decode_nic_bytes_per_s_ = 0;
  const DeploymentSpec& deployment_;
  const WorkloadSpec& workload_;
  Simulator sim_;
  std::mt19937_64 arrivals_rng_;
  std::mt19937_64 sessions_rng_;
  uint64_t trace_sessions_seed_;  // a trace's session's seed: this mixed with its id
  // The drafts a sequence's draw accepts, at the model's per-position
  // acceptance (none where it has no draft, or none known).
  DraftAcceptance draft_acceptance_;
  GapHistogram chunk_gaps_;                     // of the window's requests (ServingResult::itl_ms)
  std::vector<GapHistogram> class_chunk_gaps_;  // and by class of a mix (ClassOutcome::itl_ms)
  std::shared_ptr<StepTimeCache> steps_;
  SessionKvTiers tiers_;
  double tier_keeps_s_ = 0;
  double decode_kv_bytes_per_gpu_ = 0;
  double prefill_kv_bytes_per_gpu_ = 0;   // disaggregated: a rank's room for its prompts' KV, until shipped
  std::size_t next_instance_ = 0;         // round-robin routing: the instance the next prompt takes
  std::size_t next_decode_instance_ = 0;  // and, disaggregated, the decode instance the next request takes
  std::deque<Request> requests_;          // stable addresses
  std::vector<Session> sessions_;
  SimTime last_trace_turn_sent_;                         // a trace's: when its last turn so far was sent
  std::unordered_map<int64_t, int64_t> trace_sessions_;  // trace session id -> index into sessions_
  std::vector<std::unique_ptr<Engine>> engines_;
  std::vector<std::unique_ptr<PrefillInstance>> prefill_;
  std::vector<std::unique_ptr<DecodeInstance>> decode_;
  ServingResult result_;
  ErrorBandMix prefill_band_, decode_band_;  // over the steps run, by step time
  double imbalance_time_us_ = 0;             // decode steps' rank imbalance times their time
  double decode_time_us_ = 0;
  int64_t in_system_ = 0;
  double in_system_area_ = 0;    // integral of requests in the system over time (request-seconds)
  double ssd_read_seconds_ = 0;  // the SSD tier's clients' time spent on the reads issued
  SimTime last_change_;
  SimTime window_start_;  // the warm-up's end
  bool drain_ = false;
  KvTierCounters tiers_at_window_start_;
  // Requests in the system, integrated over each of kSteadyStateSlices equal
  // slices of the measured window (request-seconds; collect takes each
  // slice's mean): what SteadyState judges.
  std::vector<double> in_system_by_slice_;
  double slice_s_ = 1;
  double occupancy_interval_s_ = 1;
  bool accepting_ = true;
  // A closed loop's sessions started at one instant (closed_loop_instant_):
  // past many times its concurrency, its sessions are refused as they
  // arrive, and simulated time would never move on.
  SimTime closed_loop_instant_;
  int64_t started_at_instant_ = 0;
  // A closed loop with a prompt count (WorkloadSpec::prompts): its sessions
  // ended so far, and when the last of them ended (the benchmark's end).
  int64_t loop_sessions_ended_ = 0;
  std::optional<SimTime> prompts_done_at_;
  const char* last_refusal_ = "";
  // Transfers queue for their links: each prefill node's client of the SSD
  // tier (PrefillInstance::ssd_free_at) and each GPU's NIC
  // (PrefillRank::nic_free_at, DecodeRank::nic_free_at).
  SimTime queue_for(SimTime& free_at, double seconds);
  int64_t prefill_gpus_per_node() const;  // of the prefill pool's GPU (at least 1)
  SimTime trace_seconds_;                 // zero: no trace
  bool log_requests_ = false;
  bool log_steps_ = false;
  // A step beginning now, for the step log (ServingResult::steps): its
  // decoding ranks with the drafts each verifies, and its prompt chunks.
  void log_step(StepRecord::Kind kind, bool prefill_pool, std::size_t instance,
                const std::vector<RankDecode>& decoding, const std::vector<int64_t>& drafts,
                const std::vector<PrefillChunk>& chunks, double us, double communication_us,
                int64_t micro_batches);
  void trace_span(TraceSpan::Kind kind, int64_t instance, SimTime start, SimTime end, int64_t size);
};

}  // namespace v41sim
