// Request: one turn of a session, from arrival to its last output token.
#pragma once

#include <cstdint>
#include <deque>
#include <iterator>
#include <string>
#include <vector>

#include "sim/des/random.h"
#include "sim/des/sim_time.h"

namespace v41sim {

struct Request {
  // What every decode step it is in reads or writes, first and together: a
  // run's steps touch these for each sequence, so they share cache lines
  // rather than spread over the whole request.
  SimTime arrival;
  int64_t output_tokens = 0;  // tokens to generate (>= 1; the first comes from prefill)
  int64_t generated = 0;      // output tokens produced so far
  // Its draft-acceptance draws (speculative decoding), a stream of its own
  // (its session's seed and its turn), one draw a decode step, so deployments
  // given one seed draw the same acceptances for a turn's steps, step for step.
  SplitMix64 acceptance{0};
  double communication_us = 0;  // EP communication on the critical path of its steps
  // Its output streams a chunk a decode step (the step's token and the drafts
  // it accepted): when the last reached the client, and the longest gap yet
  // between two, the first token included (its worst ITL).
  SimTime last_chunk;
  SimTime longest_chunk_gap;
  int traffic_class = -1;  // its session's class in a mix of traffic (-1: no mix)

  // Given when it arrives.
  int64_t id = 0;
  int64_t session = 0;
  int64_t turn = 0;
  int64_t prefix_tokens = 0;  // context the session already had before this turn
  int64_t new_tokens = 0;     // tokens this turn adds to the context
  double think_after_s = 0;   // before the session's next turn, if it has one
  double held_s = 0;          // a trace's turn: from its row's time to its previous turn's end (0: not held)
  // A block-hashed trace's prompt: its blocks (WorkloadSpec::TraceRow::blocks), else null.
  const std::vector<int64_t>* blocks = nullptr;
  int64_t priority = 0;  // its class's in a mix of traffic (lower is served first); 0 otherwise

  // Filled in along the way.
  int64_t cached_tokens = 0;  // prefix found in the KV tiers (a block-hashed trace: leading blocks)
  int64_t replay_tokens = 0;  // window tokens replayed because the SWA state was gone
  int64_t to_compute = 0;     // tokens the prefill must run
  int64_t computed = 0;       // of to_compute, done so far
  int prefill_instance = -1;  // where it is prefilled (disaggregated: where its KV is shipped from)
  int attention_rank = -1;    // the rank of that instance whose attention runs its chunks
  int decode_instance = -1;
  int decode_rank = -1;
  const char* rejected = nullptr;  // why, if it was
  // Prefilled a slice per rank of its instance (context parallelism): each
  // rank sends its slice's KV to decode.
  bool context_parallel = false;
  double kv_reserved_bytes = 0;
  // Disaggregated: held on its prefill instance until shipped (context-parallel:
  // on each rank). Aggregated, context-parallel: each other rank's gathered
  // copy, until the prompt is prefilled.
  double prefill_kv_bytes = 0;
  SimTime prefill_queued;  // joined the prefill queue (after any SSD read)
  SimTime prefill_started;
  SimTime prefilled;  // its prompt's last chunk ran: the first token is computed
  SimTime decode_queued;
  SimTime decode_admitted;  // a decode rank took its KV room and batch slot
  SimTime decode_started;
  SimTime finished;
  double ssd_read_us = 0;
  double transfer_us = 0;

  // When the first token reaches the client: as it starts decoding, which is
  // as it is prefilled where it decodes on the same GPUs (aggregated), and
  // when its KV reaches the decode GPU where it does not (disaggregated: that
  // server streams the output, the prefill's token first, as SGLang's PD
  // disaggregation does; Dynamo and vLLM's connectors let the decode side emit
  // it); an answer of one token, as it is prefilled. SimTime() until then.
  SimTime first_token() const { return output_tokens > 1 ? decode_started : prefilled; }
  int64_t context() const { return prefix_tokens + new_tokens; }
  int64_t final_context() const { return context() + output_tokens; }
};

// Where a waiting request joins a queue: behind every request of its
// priority or a lower one, ahead of those of a higher one not `underway`
// (as vLLM's priority scheduling orders its waiting queue by priority, then
// arrival). One underway is not passed: a prompt with chunks prefilled runs
// on and keeps its KV (no preemption). With one priority: first come, first served.
template <class Underway>
void join_by_priority(std::deque<Request*>& queue, Request* r, Underway underway) {
  auto at = queue.end();
  while (at != queue.begin() && (*std::prev(at))->priority > r->priority && !underway(**std::prev(at))) --at;
  queue.insert(at, r);
}

}  // namespace v41sim
