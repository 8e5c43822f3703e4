// ServingResult: what an operator reads off a serving run.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/cost/error_band.h"
#include "sim/metrics/latency_summary.h"
#include "sim/metrics/steady_state.h"
#include "sim/serving/kv_tiers.h"
#include "sim/serving/sla_spec.h"

namespace v41sim {

// How a disaggregated request's first token is timed (Request::first_token()),
// as the outputs that report TTFT name it.
inline constexpr const char* kDecodeSideFirstTokenAssumption =
    "disaggregated, TTFT ends when the prompt's KV reaches its decode GPU, whose server streams the output, "
    "the prefill's token first (assumed, as SGLang's PD disaggregation does; Dynamo and vLLM's KV connectors "
    "leave it to the decode worker too): it holds any wait for a decode slot and the KV transfer, and TPOT "
    "counts from there";

struct OccupancySample {
  double time_s = 0;
  double decode_kv_used_fraction = 0;  // of the decode pool's KV bytes
  double prefill_kv_used_fraction =
      0;                           // disaggregated: of the prefill pool's KV bytes (prompts until shipped)
  int64_t prefill_queue = 0;       // requests waiting for or in prefill
  int64_t decode_queue = 0;        // requests waiting for a decode slot
  int64_t decoding = 0;            // requests in decode batches
  int64_t host_pool_sessions = 0;  // SWA states parked in host DRAM
};

// One span of the run's timeline, for the trace.
struct TraceSpan {
  enum class Kind {
    kPrefillStep,
    kDecodeStep,
    kRequest,
    kRequestPrefill,
    kRequestKvTransfer,
    kRequestDecode
  };
  Kind kind = Kind::kRequest;
  int64_t instance = 0;  // steps: the instance; requests: the request id
  double start_us = 0;
  double duration_us = 0;
  int64_t size = 0;  // steps: sequences in the step; requests: output tokens
};

// One request of a run, as `run --requests` writes it: what it asked, where
// it went, and how long each stage took (NaN where it did not get there).
struct RequestRecord {
  int64_t id = 0;
  int64_t session = 0;
  std::string traffic_class;  // its session's class in a mix of traffic; empty without one
  int64_t turn = 0;
  double arrival_s = 0;  // when it reached the deployment
  double held_ms = 0;    // a trace's turn: from its row's time to arrival_s, waiting for its previous answer
  int64_t prefix_tokens = 0;  // context before this turn
  int64_t new_tokens = 0;
  int64_t cached_tokens =
      0;  // of the prefix (a block-hashed trace: of the prompt's leading blocks), found in the SSD tier
  int64_t replay_tokens = 0;  // window tokens recomputed after an SWA-state miss
  int64_t output_tokens = 0;  // asked for
  int64_t generated = 0;      // by the run's end
  std::string status;         // "finished", "in flight" or "rejected: <why>"
  int prefill_instance = -1;  // -1: never routed
  int prefill_rank = -1;
  bool context_parallel = false;
  int decode_instance = -1;  // -1: never placed for decode
  int decode_rank = -1;
  double ssd_read_ms = 0;
  double prefill_wait_ms = 0;  // SSD read done to its first chunk
  double ttft_ms = 0;
  double transfer_ms = 0;
  double decode_wait_ms = 0;  // prefilled to a decode rank's room (disaggregated: KV transfer after)
  double tpot_ms = 0;
  double max_itl_ms = 0;  // its longest gap between streamed chunks (ServingResult::itl_ms)
  double e2e_ms = 0;
  // Finished within its TTFT and TPOT limits, and its ITL limit where one is set (its class's in a mix);
  // false where it did not finish.
  bool within_sla = false;
  bool measured = true;  // arrived in the measured window, not in the warm-up
};

// One step of a run's measured window, as `run --steps` writes it: which
// engine ran it, what it carried (its ranks together) and how long it took.
struct StepRecord {
  enum class Kind { kPrefill, kContextParallel, kDecode, kMixed };
  double start_s = 0;        // when it began, on the clock of RequestRecord::arrival_s
  bool prefill_pool = true;  // the instance is the prefill pool's (aggregated: an instance's prompt steps)
  int instance = 0;
  Kind kind = Kind::kDecode;
  int64_t sequences = 0;      // decoding in it, every rank (a prompt step: the ranks decoding beside it)
  double decode_context = 0;  // their tokens so far, on average (0: none)
  double drafts = 0;          // draft tokens each verified, on average
  int64_t prompts = 0;        // prompt chunks in it, every rank
  int64_t prompt_tokens = 0;  // tokens those chunks computed
  double prompt_context = 0;  // each prompt's tokens up to its chunk's end, on average (0: none)
  double step_ms = 0;
  double communication_ms = 0;  // EP communication left on the critical path
  int64_t micro_batches = 1;
};
inline const char* step_kind_name(StepRecord::Kind kind) {
  switch (kind) {
    case StepRecord::Kind::kPrefill:
      return "prefill";
    case StepRecord::Kind::kContextParallel:
      return "context_parallel";
    case StepRecord::Kind::kDecode:
      return "decode";
    case StepRecord::Kind::kMixed:
      return "mixed";
  }
  return "";
}

// The window's requests that missed their SLA, by what they missed: a
// request may pass over several limits; one that never finished (in flight
// at the run's end, or rejected) counts as unfinished alone.
struct SlaMisses {
  int64_t unfinished = 0;
  int64_t ttft = 0;
  int64_t tpot = 0;
  int64_t itl = 0;
  SlaMisses& operator+=(const SlaMisses& o) {
    unfinished += o.unfinished, ttft += o.ttft, tpot += o.tpot, itl += o.itl;
    return *this;
  }
};

// One class of a mix of traffic (WorkloadSpec::mix), on its own.
struct ClassOutcome {
  std::string name;
  int64_t sessions = 0;
  int64_t arrived = 0;  // requests
  int64_t finished = 0;
  int64_t within_sla = 0;  // finished within the class's limits (sla)
  SlaSpec sla;             // the limits it is held to: its own from the mix, the deployment's for the rest
  LatencySummary ttft_ms;
  LatencySummary tpot_ms;
  LatencySummary itl_ms;          // of every chunk of its requests in the window (ServingResult::itl_ms)
  LatencySummary longest_itl_ms;  // of its finished requests (ServingResult::longest_itl_ms)
};

struct ServingResult {
  // The run served `warm_up_s` of arrivals from an empty deployment, then
  // measured `duration_s` more: requests and their latencies count if they
  // arrived in that window; steps, reads, tier lookups and time in the system
  // if they happened in it (a drained run's until its end); tokens when they
  // were produced in it, and in a drained run only those of its requests.
  double warm_up_s = 0;
  double duration_s = 0;
  // Arrivals replayed from a trace: its load rises and falls as its sessions
  // do, so the requests in the system need not settle (ServedRun::holds_sla).
  bool replays_trace = false;
  // Drained, the window ended with the trace's last row, before the time asked:
  // it served the whole trace from the warm-up on.
  bool window_ends_with_trace = false;
  // The window ended with the last of a closed loop's prompts
  // (WorkloadSpec::prompts): it is the benchmark's whole span from the warm-up on.
  bool window_ends_with_prompts = false;
  // Either: the traffic itself ended the window, and a longer run serves nothing more.
  bool window_ends_with_traffic() const { return window_ends_with_trace || window_ends_with_prompts; }
  // Had the deployment settled over the window? MSER-5 on the requests in
  // the system (sim/metrics/steady_state.h): the load sessions of many turns
  // build up, and an overloaded deployment's queue, which never settles.
  SteadyState steady_state;
  int64_t gpus = 0;
  // Every request is accounted for: arrived = finished + in_flight + rejected.
  int64_t arrived = 0;
  int64_t finished = 0;
  int64_t in_flight = 0;
  int64_t rejected = 0;
  std::map<std::string, int64_t> rejected_by_reason;
  SlaMisses sla_misses;  // of the arrived: each request against its own limits (its class's in a mix)
  // Tokens: what arrived for prefill, what was prefilled, what was generated.
  int64_t input_tokens_arrived = 0;
  int64_t input_tokens_prefilled = 0;  // computed, incl. window replay; excl. cached prefixes
  int64_t input_tokens_cached = 0;
  int64_t input_tokens_replayed = 0;  // window replay after an SWA-state miss
  // A block-hashed trace: the tokens of each arriving prompt's leading blocks
  // that an earlier row names, what a tier keeping every block at once could
  // serve (at most all but each prompt's last token); 0 otherwise.
  int64_t input_tokens_shareable = 0;
  int64_t output_tokens_generated = 0;
  int64_t input_tokens_to_compute = 0;    // what admitted requests asked the prefill to run
  int64_t output_tokens_of_finished = 0;  // what finished requests asked for
  // Latencies of finished requests.
  LatencySummary ttft_ms;
  LatencySummary tpot_ms;
  // Gaps between streamed output chunks (a decode step's tokens reach the
  // client together), the first token's included: every chunk of the
  // window's requests, finished or not; percentiles binned (GapHistogram).
  LatencySummary itl_ms;
  // Each finished request's longest gap between its streamed chunks: what an
  // ITL limit judges (SlaSpec::itl_ms), a request's worst stall (as TPOT, of
  // those with more than one token: one alone has no gap).
  LatencySummary longest_itl_ms;
  LatencySummary e2e_ms;
  LatencySummary prefill_wait_ms;  // SSD read done to prefill start
  LatencySummary decode_wait_ms;   // KV transfer done to first decode step
  double mean_ssd_read_ms = 0;
  // The SSD tier's clients (one on each prefill node): the time the reads
  // issued in the run keep them busy, over the run's time. Near 1 the tier's
  // read rate, not the GPUs, holds prompts back.
  double ssd_clients_busy_fraction = 0;
  double mean_prefill_ms = 0;  // prefill start to first token
  double mean_transfer_ms = 0;
  double mean_decode_ms = 0;         // first decode step to last token
  double mean_communication_ms = 0;  // of prefill + decode: EP all-to-all compute did not hide
  // Rates.
  double input_tokens_per_s_per_gpu = 0;
  double output_tokens_per_s_per_gpu = 0;
  double goodput_requests_per_s = 0;  // finished within the SLA
  double goodput_fraction = 0;        // of finished requests
  // Little's law inputs.
  double mean_in_system = 0;
  double arrival_rate_per_s = 0;
  double mean_sojourn_s = 0;
  KvTierCounters kv_tiers;
  // The SSD tier's footprint: sessions that arrived in the window (a closed
  // loop's sessions at time 0 are its population; their successors arrive as
  // they end, at the rate the tier fills), and the global KV of
  // each one's last context (its turns as drawn, whether or not the run saw
  // them all), the mean over them. The tier keeps it for the retention time
  // after the session's last turn (sim/costing/serving_cost.h).
  int64_t sessions_arrived = 0;
  double mean_last_context_tokens = 0;
  double persisted_bytes_per_session = 0;  // global KV of that context
  // How long the tier keeps a session's context, token-weighted: the
  // retention, less where a resumed session found its earlier context
  // sooner and replaced it.
  double mean_hold_s = 0;
  // How long the tier keeps a context: the retention, or less where a tier
  // of bounded size fills first and evicts the least recently stored.
  double tier_keeps_s = 0;
  // Sessions resumed after a gap (WorkloadSpec::Resumption), and those of
  // them whose first turn found its earlier context in the SSD tier.
  int64_t sessions_resumed = 0;
  int64_t resumed_found = 0;
  // A trace's turns that came while their session's previous turn was
  // underway, and waited for its answer (Request::held_s): how many, and
  // their waits' sum.
  int64_t trace_turns_held = 0;
  double trace_turns_held_s = 0;
  int64_t trace_turns_still_held = 0;  // at the run's end: never sent
  double mean_trace_turn_held_s() const {
    return trace_turns_held > 0 ? trace_turns_held_s / static_cast<double>(trace_turns_held) : 0.0;
  }
  double decode_kv_bytes_per_gpu = 0;
  int64_t prefill_steps = 0;
  int64_t context_parallel_steps = 0;  // of prefill_steps: one prompt over every rank
  int64_t decode_steps = 0;
  int64_t mixed_steps = 0;  // of decode_steps: carrying prompt chunks (aggregated_steps: mixed)
  // Of prefill_steps (aggregated): those in which ranks without a prompt
  // decoded, and of them those whose slowest rank was a decoding one.
  int64_t prefill_steps_with_decode = 0;
  int64_t prefill_steps_set_by_decode = 0;
  // Aggregated, with a prefill delay: decode steps run while prompts were held
  // for the other ranks' (DeploymentSpec::prefill_delay_steps).
  int64_t prefill_delays = 0;
  // Steps run as two overlapped micro-batches (the slowest rank's choice).
  int64_t prefill_steps_split = 0;
  int64_t decode_steps_split = 0;
  // Data-parallel ranks step together, so the busiest sets the pace: its
  // decode sequences over the fewest it could have had (the step's sequences
  // dealt evenly over the ranks), weighted by step time. 1: as even as they
  // can be; two sequences on one rank of four: 2.
  double decode_rank_imbalance = 1;
  // The kernel model's 90% band over the steps this run simulated, weighted by
  // step time (sim/cost/error_band.h): what TTFT's compute and TPOT inherit.
  ErrorBand prefill_band;
  ErrorBand decode_band;
  uint64_t events = 0;
  // In the step times this run used; shared by several runs (seeds run side by
  // side), by all of them: serve_deployment counts them when the seeds are done.
  std::size_t step_shapes_costed = 0;
  std::vector<OccupancySample> occupancy;
  std::vector<TraceSpan> trace;         // filled only when tracing is on
  std::vector<RequestRecord> requests;  // every request, in arrival order; filled only when asked
  std::vector<StepRecord> steps;        // every step of the measured window, as begun; filled only when asked
  std::vector<ClassOutcome> by_class;   // a mix of traffic's classes, in the workload's order; else empty
};

}  // namespace v41sim
