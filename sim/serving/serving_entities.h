// The serving simulation's private entities, shared by its three source
// files (arrivals and bookkeeping; prefill; decode). Not part of the API.
#pragma once

#include <cstdint>
#include <deque>
#include <numeric>
#include <vector>

#include "sim/serving/serving_simulation.h"

namespace v41sim {

// The index in [0, n) whose load is least, of those `eligible`; ties to the
// lowest; n when none is.
template <typename LoadOf, typename Eligible>
std::size_t least_loaded(std::size_t n, LoadOf load_of, Eligible eligible) {
  std::size_t best = n;
  double best_load = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!eligible(i)) continue;
    if (const double load = load_of(i); best == n || load < best_load) {
      best = i;
      best_load = load;
    }
  }
  return best;
}
template <typename LoadOf>
std::size_t least_loaded(std::size_t n, LoadOf load_of) {
  return least_loaded(n, load_of, [](std::size_t) { return true; });
}

struct ServingSimulation::Session {
  SimTime started;  // its first turn's arrival
  // One of a closed loop's sessions at time 0: the loop's standing
  // population, not an arrival (its successors arrive as sessions end).
  bool fills_closed_loop = false;
  int traffic_class = -1;  // of the workload's mix (-1: no mix)
  int64_t turns = 0;
  int64_t next_turn = 0;
  bool from_trace = false;    // turns come from the trace, not from think times
  int64_t trace_context = 0;  // context the trace's turns have built so far
  // A trace's session sends a turn once it has its previous turn's answer
  // (that answer is in the turn's prefix): a row whose time comes while a
  // turn is underway (a trace replayed faster than it was recorded, or on
  // slower GPUs) waits here, in order, and is sent when that turn ends.
  bool trace_turn_underway = false;
  std::deque<const WorkloadSpec::TraceRow*> trace_rows_held;
  // A block-hashed trace's row: the tokens of its blocks no earlier row names,
  // what it adds to the SSD tier (-1: a session of turns, whose context stays).
  int64_t trace_new_block_tokens = -1;
  // Each turn draws its tokens and the think time after it from a stream of
  // its own (this seed and the turn's number), so what a session asks does
  // not depend on when the deployment serves it: two deployments given one
  // seed serve the same sessions, turn for turn (common random numbers).
  uint64_t seed = 0;
  // A session resumed after a gap (WorkloadSpec::Resumption): the context
  // its earlier life left, the prefix of its first turn here; and whether
  // that turn found it in the SSD tier, which then holds it no longer than the gap.
  bool resumed = false;
  double resumed_after_s = 0;
  int64_t earlier_context = 0;
  bool earlier_context_found = false;
  // A turn refused (too long for the model or a GPU's KV memory) ends the
  // session: the context before it, which the tier keeps (-1: none refused).
  int64_t ended_at_context = -1;
};

// The GPUs of an instance run one step at a time. Aggregated deployments
// give a prefill instance and a decode instance the same engine.
struct ServingSimulation::Engine {
  bool busy = false;
};

// Data-parallel attention (SGLang's DP attention, vLLM's data parallelism):
// a prompt is routed to one rank of the instance, whose scheduler runs its
// chunks and, aggregated, holds its KV and decodes it; the ranks' steps meet
// in the EP all-to-all, so the slowest rank sets the step.
struct ServingSimulation::PrefillRank {
  std::deque<Request*> queue;   // its prompts in arrival order, waiting or part done
  int64_t tokens_left = 0;      // prompt tokens its prompts (queued or reading) have still to compute
  int64_t queued_context = 0;   // the context tokens of those prompts
  double kv_used = 0;           // disaggregated: its prompts' KV, from their first chunk until shipped
  int64_t reading = 0;          // prompts routed here still reading their prefix from the SSD tier
  int64_t shipping_tokens = 0;  // disaggregated: the context tokens of those done, waiting to be shipped
  SimTime nic_free_at;          // disaggregated: its GPU's NIC, sending its prompts' KV to decode
};

struct ServingSimulation::PrefillInstance {
  std::deque<Request*> queue;  // its prompts in arrival order, waiting or part done, over every rank
  std::vector<PrefillRank> ranks;
  std::size_t next_rank = 0;  // round-robin routing: the rank the next prompt takes
  // Each of its nodes' client of the SSD tier, reading the cached prefixes of
  // the prompts routed to that node's ranks.
  std::vector<SimTime> ssd_free_at;
  int index = 0;
  Engine* engine = nullptr;
  // Aggregated: the decode instance on the same GPUs, where a prompt's KV is
  // held from its first chunk on (null when disaggregated).
  DecodeInstance* colocated = nullptr;
  // Aggregated, with a prefill delay: decode steps run in a row while its
  // prompts were held for the other ranks' (DeploymentSpec::prefill_delay_steps).
  int64_t held_steps = 0;
};

struct ServingSimulation::DecodeRank {
  std::vector<Request*> active;
  int64_t history_tokens = 0;  // over the active sequences: context and tokens generated
  // Sequences that hold KV room and a batch slot here but do not decode yet:
  // aggregated, prompts in prefill; disaggregated, KV on its way over the NICs.
  int64_t arriving = 0;
  double kv_used = 0;
  SimTime nic_free_at;  // disaggregated: its GPU's NIC, receiving KV from prefill
  bool has_room_for(const Request& r, double kv_bytes_per_gpu, int64_t max_batch) const {
    return static_cast<int64_t>(active.size()) + arriving < max_batch &&
           kv_bytes_per_gpu - kv_used >= r.kv_reserved_bytes;
  }
  void start_decoding(Request* r) {
    active.push_back(r);
    history_tokens += r->context() + r->generated;
  }
  // Mean tokens of history over the active sequences (0 when none).
  int64_t mean_history() const {
    if (active.empty()) return 0;
    return static_cast<int64_t>(static_cast<double>(history_tokens) / static_cast<double>(active.size()));
  }
};

struct ServingSimulation::DecodeInstance {
  std::vector<DecodeRank> ranks;
  std::deque<Request*> queue;
  std::size_t next_rank = 0;  // disaggregated, round-robin routing: the rank the next request takes
  Engine* engine = nullptr;
  double kv_used() const {
    return std::accumulate(ranks.begin(), ranks.end(), 0.0,
                           [](double sum, const DecodeRank& r) { return sum + r.kv_used; });
  }
};

}  // namespace v41sim
