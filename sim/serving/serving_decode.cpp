// ServingSimulation, decode: admission by KV room and batch slots,
// continuous-batching steps (with speculative decoding), and finishing turns.
#include <algorithm>
#include <cmath>

#include "sim/serving/serving_entities.h"

namespace v41sim {

void ServingSimulation::enqueue_decode(Request& r, std::optional<std::size_t> instance) {
  r.decode_queued = sim_.now();
  r.kv_reserved_bytes = model_.kv.session_bytes(r.final_context());
  if (r.kv_reserved_bytes > decode_kv_bytes_per_gpu_) {
    reject(r, "final context does not fit in one decode GPU's KV memory");
    return;
  }
  // The instance with the least KV in use, unless the KV already sits on one.
  std::size_t best = instance.value_or(0);
  for (std::size_t i = 1; !instance && i < decode_.size(); ++i) {
    if (decode_[i]->kv_used() < decode_[best]->kv_used()) best = i;
  }
  decode_[best]->queue.push_back(&r);
  try_admit(best);
  try_start_decode(best);
}

void ServingSimulation::try_admit(std::size_t index) {
  DecodeInstance& inst = *decode_[index];
  while (!inst.queue.empty()) {
    Request& r = *inst.queue.front();
    DecodeRank* best = nullptr;
    for (DecodeRank& rank : inst.ranks) {
      const bool slot = static_cast<int64_t>(rank.active.size()) < deployment_.decode.max_batch_per_gpu;
      const bool room = decode_kv_bytes_per_gpu_ - rank.kv_used >= r.kv_reserved_bytes;
      if (slot && room && (best == nullptr || rank.kv_used < best->kv_used)) best = &rank;
    }
    if (best == nullptr) return;  // first come, first served: the head waits for room
    inst.queue.pop_front();
    best->active.push_back(&r);
    best->kv_used += r.kv_reserved_bytes;
    r.decode_started = sim_.now();
  }
}

void ServingSimulation::try_start_decode(std::size_t index) {
  DecodeInstance& inst = *decode_[index];
  if (inst.engine->busy) return;
  // Ranks step together (EP synchronises them): the slowest sets the step.
  // Each rank verifies the number of draft tokens best for its own batch.
  double step_us = 0;
  double step_communication_us = 0;
  ErrorBand step_band;
  int64_t step_micro_batches = 1;
  int64_t batch = 0;
  std::vector<double> tokens_per_sequence(inst.ranks.size(), 1.0);
  for (std::size_t i = 0; i < inst.ranks.size(); ++i) {
    const DecodeRank& rank = inst.ranks[i];
    if (rank.active.empty()) continue;
    double context = 0;
    for (const Request* r : rank.active) context += static_cast<double>(r->context() + r->generated);
    const auto n = static_cast<int64_t>(rank.active.size());
    const StepTimeCache::DecodeStep step =
        steps_.decode_step(n, static_cast<int64_t>(context / static_cast<double>(n)));
    if (step.us > step_us) {  // the slowest rank sets the step
      step_us = step.us;
      step_communication_us = step.communication_us;
      step_band = step.band;
      step_micro_batches = step.micro_batches;
    }
    tokens_per_sequence[i] = step.tokens_per_sequence;
    batch += n;
  }
  if (step_us == 0) return;
  inst.engine->busy = true;
  ++result_.decode_steps;
  if (step_micro_batches > 1) ++result_.decode_steps_split;
  decode_band_.add(step_band, step_us);
  trace_span(TraceSpan::Kind::kDecodeStep, static_cast<int64_t>(index), sim_.now(),
             sim_.now() + SimTime::from_us(step_us), batch);
  sim_.schedule_after(SimTime::from_us(step_us), [this, index, tokens_per_sequence, step_communication_us] {
    DecodeInstance& d = *decode_[index];
    d.engine->busy = false;
    for (std::size_t i = 0; i < d.ranks.size(); ++i) {
      DecodeRank& rank = d.ranks[i];
      std::vector<Request*> still;
      for (Request* r : rank.active) {
        r->communication_us += step_communication_us;
        // Expected tokens accumulate; whole ones are emitted (deterministic).
        r->token_credit += tokens_per_sequence[i];
        const auto emitted = std::min(static_cast<int64_t>(r->token_credit), r->output_tokens - r->generated);
        r->token_credit -= static_cast<double>(emitted);
        r->generated += emitted;
        result_.output_tokens_generated += emitted;
        if (r->generated < r->output_tokens) {
          still.push_back(r);
          continue;
        }
        rank.kv_used -= r->kv_reserved_bytes;
        finish(*r);
      }
      rank.active = std::move(still);
    }
    try_admit(index);
    if (deployment_.disaggregated) {
      try_start_decode(index);
    } else {
      next_step(index);
    }
  });
}

// Aggregated deployments: after any step the shared engine serves waiting
// prefill first (new requests' TTFT), then decode.
void ServingSimulation::next_step(std::size_t index) {
  try_start_prefill(index);
  try_start_decode(index);
}

void ServingSimulation::finish(Request& r) {
  r.finished = sim_.now();
  ++result_.finished;
  trace_span(TraceSpan::Kind::kRequest, r.id, r.arrival, r.finished, r.output_tokens);
  trace_span(TraceSpan::Kind::kRequestPrefill, r.id, r.prefill_started, r.first_token, r.output_tokens);
  if (r.output_tokens > 1) {
    trace_span(TraceSpan::Kind::kRequestDecode, r.id, r.decode_started, r.finished, r.output_tokens);
  }
  result_.output_tokens_of_finished += r.output_tokens;
  change_in_system(-1);
  Session& s = sessions_[static_cast<std::size_t>(r.session)];
  if (s.from_trace) {
    tiers_.store(r.session, r.final_context(), sim_.now());
    return;
  }
  if (s.next_turn >= s.turns || !accepting_) {
    tiers_.forget(r.session);
    return;
  }
  tiers_.store(r.session, r.final_context(), sim_.now());
  const double think = workload_.think_time_s.sample(sessions_rng_);
  sim_.schedule_after(SimTime::from_s(think), [this, &r] { start_turn(r.session, r.final_context()); });
}

}  // namespace v41sim
