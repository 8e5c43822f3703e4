// ServingSimulation, decode: admission by KV room and batch slots,
// continuous-batching steps (with speculative decoding), and finishing turns.
#include <algorithm>
#include <cmath>

#include "sim/serving/serving_entities.h"

namespace v41sim {

// Disaggregated decode places requests by the deployment's routing too, as
// each engine's decode side does (Dynamo's KV router costs decode workers by
// the KV they hold, vLLM's data-parallel balancer counts requests, SGLang's
// data-parallel controller deals in turn): an instance, then, when one of its
// ranks has room, that rank. Dealt in turn, a request is given its instance
// and rank at once, and waits at that rank for room, as SGLang's controller
// hands it to a rank's scheduler whatever that rank holds.
void ServingSimulation::enqueue_decode(Request& r) {
  r.decode_queued = sim_.now();
  std::size_t best = 0;
  if (deployment_.routing == DeploymentSpec::Routing::kRoundRobin) {
    best = next_decode_instance_++ % decode_.size();
    DecodeInstance& inst = *decode_[best];
    r.decode_rank = static_cast<int>(inst.next_rank++ % inst.ranks.size());
  } else {
    best = least_loaded(decode_.size(), [this](std::size_t i) { return decode_load(*decode_[i]); });
  }
  // Nothing waiting for a decode rank's room has begun there.
  join_by_priority(decode_[best]->queue, &r, [](const Request&) { return false; });
  try_admit(best);
  try_start_decode(best);
}

// Least load: the KV it holds. Least requests: 4 x waiting + running (those
// whose KV is on its way count as running).
double ServingSimulation::decode_load(const DecodeInstance& inst) const {
  if (deployment_.routing == DeploymentSpec::Routing::kLeastRequests) {
    double load = 4 * static_cast<double>(inst.queue.size());
    for (const DecodeRank& rank : inst.ranks) load += decode_load(rank);
    return load;
  }
  return inst.kv_used();
}

double ServingSimulation::decode_load(const DecodeRank& rank) const {
  if (deployment_.routing == DeploymentSpec::Routing::kLeastRequests) {
    return static_cast<double>(rank.active.size()) + static_cast<double>(rank.arriving);
  }
  return rank.kv_used;
}

void ServingSimulation::try_admit(std::size_t index) {
  if (deployment_.routing == DeploymentSpec::Routing::kRoundRobin) {
    admit_at_given_ranks(index);
    return;
  }
  DecodeInstance& inst = *decode_[index];
  const std::size_t n = inst.ranks.size();
  while (!inst.queue.empty()) {
    Request& r = *inst.queue.front();
    const auto has_room = [&](std::size_t k) {
      return inst.ranks[k].has_room_for(r, decode_kv_bytes_per_gpu_, deployment_.decode.max_batch_per_gpu);
    };
    const std::size_t chosen = least_loaded(
        n, [&](std::size_t k) { return decode_load(inst.ranks[k]); }, has_room);
    if (chosen == n) return;  // first come, first served: the head waits for room
    inst.queue.pop_front();
    admit(index, chosen, r);
  }
}

// Each rank takes the requests given to it in their order, while it has room;
// a request waiting at a full rank holds back only that rank's later ones.
void ServingSimulation::admit_at_given_ranks(std::size_t index) {
  DecodeInstance& inst = *decode_[index];
  std::vector<bool> full(inst.ranks.size(), false);
  std::deque<Request*> waiting;
  for (Request* r : inst.queue) {
    const auto k = static_cast<std::size_t>(r->decode_rank);
    if (!full[k] &&
        inst.ranks[k].has_room_for(*r, decode_kv_bytes_per_gpu_, deployment_.decode.max_batch_per_gpu)) {
      admit(index, k, *r);
    } else {
      full[k] = true;
      waiting.push_back(r);
    }
  }
  inst.queue = std::move(waiting);
}

void ServingSimulation::admit(std::size_t index, std::size_t rank_index, Request& r) {
  DecodeRank& rank = decode_[index]->ranks[rank_index];
  ++rank.arriving;
  rank.kv_used += r.kv_reserved_bytes;
  r.decode_admitted = sim_.now();
  r.decode_instance = static_cast<int>(index);
  r.decode_rank = static_cast<int>(rank_index);
  ship_kv(index, rank, r);
}

// The decode rank has taken the request's room: its KV goes to that GPU,
// NIC to NIC (GPUDirect RDMA, as Mooncake and NIXL move it, each GPU through
// the NIC beside it), in the order decode admits requests. A transfer starts
// when its NICs are free and lasts as long as the slower end needs: one
// prefill GPU's NIC sends it, or, for a prompt prefilled context-parallel,
// every rank of its instance sends its slice, and one decode GPU's NIC takes
// it all. So transfers to one decode GPU queue for its NIC, whichever
// instance sends them.
void ServingSimulation::ship_kv(std::size_t index, DecodeRank& rank, Request& r) {
  const double bytes = model_.kv.session_bytes(r.context());
  PrefillInstance& from = *prefill_[static_cast<std::size_t>(r.prefill_instance)];
  std::vector<SimTime*> nics{&rank.nic_free_at};
  if (r.context_parallel) {
    for (PrefillRank& sender : from.ranks) nics.push_back(&sender.nic_free_at);
  } else {
    nics.push_back(&prefill_rank_of(r).nic_free_at);
  }
  const auto senders = static_cast<double>(nics.size() - 1);
  const double seconds =
      std::max(bytes / senders / prefill_nic_bytes_per_s_, bytes / decode_nic_bytes_per_s_);
  SimTime start = sim_.now();
  for (const SimTime* nic : nics) start = std::max(start, *nic);
  const SimTime sent = start + SimTime::from_s(seconds);
  for (SimTime* nic : nics) *nic = sent;
  r.transfer_us = (sent - sim_.now()).us();
  sim_.schedule_at(sent, [this, index, &rank, &r] {
    prefill_rank_of(r).shipping_tokens -= r.context();
    release_prefill_kv(r);  // the prefill instance's copy is no longer needed
    try_start_prefill(static_cast<std::size_t>(r.prefill_instance));  // a prompt may wait for that room
    --rank.arriving;
    rank.start_decoding(&r);
    r.decode_started = sim_.now();  // and its first token reaches the client (Request::first_token())
    try_start_decode(index);
  });
}

void ServingSimulation::try_start_decode(std::size_t index) {
  DecodeInstance& inst = *decode_[index];
  if (inst.engine->busy) return;
  // Ranks step together (EP synchronises them): the slowest sets the step.
  // Each rank verifies the number of draft tokens best for its own batch,
  // and its experts take the group's tokens (every rank's verified positions).
  const std::vector<RankDecode> ranks = rank_decodes(inst, {});
  GroupDecode group = decode_in_group(ranks, per_rank(decoding_positions(ranks), inst.ranks.size()), false);
  const StepTimeCache::StepCost& step = group.slowest;
  if (step.us == 0) return;
  int64_t batch = 0;
  for (const RankDecode& d : ranks) batch += d.sequences;
  inst.engine->busy = true;
  if (measuring()) {
    ++result_.decode_steps;
    if (step.micro_batches > 1) ++result_.decode_steps_split;
    decode_band_.add(step.band, step.us);
    add_decode_imbalance(inst, step.us);
  }
  log_step(StepRecord::Kind::kDecode, false, index, ranks, group.drafts, {}, step.us, step.communication_us,
           step.micro_batches);
  trace_span(TraceSpan::Kind::kDecodeStep, static_cast<int64_t>(index), sim_.now(),
             sim_.now() + SimTime::from_us(step.us), batch);
  sim_.schedule_after(SimTime::from_us(step.us),
                      [this, index, credit = credit_at_step_start(inst, std::move(group.drafts)),
                       communication_us = step.communication_us] {
                        decode_[index]->engine->busy = false;
                        emit_decode_tokens(index, credit, communication_us);
                        try_admit(index);
                        if (deployment_.disaggregated) {
                          try_start_decode(index);
                        } else {
                          next_step(index);
                        }
                      });
}

ServingSimulation::GroupDecode ServingSimulation::decode_in_group(const std::vector<RankDecode>& ranks,
                                                                  int64_t group_tokens_per_rank,
                                                                  bool beside_prompts) {
  GroupDecode group;
  group.drafts.assign(ranks.size(), 0);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const RankDecode& d = ranks[i];
    if (d.sequences == 0) continue;
    const StepTimeCache::DecodeStep step =
        steps_->decode_in_group(d.plain, d.sequences, d.history, group_tokens_per_rank, beside_prompts);
    group.drafts[i] = step.drafts;
    if (step.us > group.slowest.us)  // the slowest rank sets the step
      group.slowest = {step.us, step.communication_us, step.band, step.micro_batches};
  }
  return group;
}

ServingSimulation::DecodeCredit ServingSimulation::credit_at_step_start(const DecodeInstance& inst,
                                                                        std::vector<int64_t> drafts) {
  DecodeCredit credit{std::move(drafts), {}};
  for (const DecodeRank& rank : inst.ranks) credit.sequences.push_back(rank.active.size());
  return credit;
}

int64_t ServingSimulation::accepted_drafts(Request& r, int64_t drafts) const {
  // One draw a step, whatever the drafts verified: the run of positions the
  // draft gets right (each with p given the ones before: P(run >= j) = p^j),
  // cut at the drafts verified. A request's n-th step draws the same run in
  // any deployment, so two that verify different numbers of drafts differ
  // only by the cut (common random numbers).
  const double at_most_one = 1.0 - uniform01(r.acceptance);  // (0, 1]
  return draft_acceptance_.accepted(at_most_one, drafts);
}

// A step's tokens reach the client together, one streamed chunk: its gap
// from the one before (the first after the first token: from that token) is
// one inter-token latency, as vLLM's benchmark counts them.
void ServingSimulation::stream_chunk(Request& r) {
  const SimTime gap = sim_.now() - (r.generated == 1 ? r.first_token() : r.last_chunk);
  r.last_chunk = sim_.now();
  r.longest_chunk_gap = std::max(r.longest_chunk_gap, gap);
  if (!in_window(r)) return;
  chunk_gaps_.add(gap);
  if (r.traffic_class >= 0) class_chunk_gaps_[static_cast<std::size_t>(r.traffic_class)].add(gap);
}

void ServingSimulation::emit_decode_tokens(std::size_t index, const DecodeCredit& credit,
                                           double communication_us) {
  DecodeInstance& d = *decode_[index];
  for (std::size_t i = 0; i < d.ranks.size(); ++i) {
    DecodeRank& rank = d.ranks[i];
    // Sequences join at the back (DecodeRank::start_decoding), and stay in
    // order: the step's that go on close up in place (no list a step), those
    // that joined since it started stay behind them.
    const std::size_t stepped = credit.sequences[i];
    std::size_t kept = 0;
    for (std::size_t j = 0; j < stepped; ++j) {
      Request* r = rank.active[j];
      r->communication_us += communication_us;
      stream_chunk(*r);
      // Its own token and the drafts the step accepted (speculative decoding).
      const int64_t emitted =
          std::min(1 + accepted_drafts(*r, credit.drafts[i]), r->output_tokens - r->generated);
      r->generated += emitted;
      rank.history_tokens += emitted;
      credit_output_tokens(*r, emitted);
      if (r->generated < r->output_tokens) {
        rank.active[kept++] = r;
        continue;
      }
      rank.history_tokens -= r->context() + r->generated;
      rank.kv_used -= r->kv_reserved_bytes;
      finish(*r);
    }
    rank.active.erase(rank.active.begin() + static_cast<std::ptrdiff_t>(kept),
                      rank.active.begin() + static_cast<std::ptrdiff_t>(stepped));
  }
}

// Aggregated deployments: after any step the shared engine serves waiting
// prefill first (new requests' TTFT), then decode; or, mixing them, runs one
// decode step that carries the waiting prompts' chunks.
void ServingSimulation::next_step(std::size_t index) {
  if (deployment_.mixes_prompt_chunks()) {
    try_start_mixed_step(index);
    return;
  }
  try_start_prefill(index);
  try_start_decode(index);
}

// One rank's part of a mixed step: its decode (drafts as its plain step
// verifies them) and the chunks it packed from its own queue. The experts
// take the group's tokens (StepShape::expert_token_share); a rank with no
// chunk of its own, in a step where other ranks carry some, decodes as they
// run: launched, normal-mode transfers (StepShape::beside_prompts).
StepTimeCache::DecodeStep ServingSimulation::rank_mixed_step(const RankDecode& d, const RankChunks& p,
                                                             int64_t group_tokens_per_rank,
                                                             bool group_has_chunks) {
  if (p.prompts == 0) {
    if (d.sequences == 0) return d.plain;
    return steps_->decode_in_group(d.plain, d.sequences, d.history, group_tokens_per_rank, group_has_chunks);
  }
  if (d.sequences > 0) {
    return steps_->mixed_step(d.sequences, d.history, p.prompts, p.mean_new_tokens, p.mean_context,
                              p.continuing, group_tokens_per_rank);
  }
  const StepTimeCache::StepCost cost =
      steps_->prefill_step(p.prompts, p.mean_new_tokens, p.mean_context, p.continuing, group_tokens_per_rank);
  return {cost.us, cost.communication_us, 1.0, 0, cost.band, cost.micro_batches};
}

// Each rank's decode batch takes queued prompts' chunks up to the prefill
// block's token budget less its own decode tokens (vLLM's token budget); the
// slowest rank sets the step. With nothing decoding, or nothing waiting, the
// step is a plain one; a prompt long enough for context parallelism still
// takes every rank for a step of its own.
void ServingSimulation::try_start_mixed_step(std::size_t index) {
  PrefillInstance& prompts = *prefill_[index];
  DecodeInstance& inst = *decode_[index];
  if (inst.engine->busy) return;
  const bool decoding = std::any_of(inst.ranks.begin(), inst.ranks.end(),
                                    [](const DecodeRank& r) { return !r.active.empty(); });
  const int64_t cp_min = deployment_.prefill.context_parallel_min_tokens;
  const bool needs_whole_instance =
      !prompts.queue.empty() && cp_min > 0 &&
      prompts.queue.front()->to_compute - prompts.queue.front()->computed >= cp_min;
  if (!decoding || prompts.queue.empty() || needs_whole_instance) {
    try_start_prefill(index);
    try_start_decode(index);
    return;
  }
  const std::vector<RankDecode> ranks = rank_decodes(inst, {});
  std::vector<PrefillChunk> chunks;
  std::vector<RankChunks> packed;
  int64_t group_tokens = decoding_positions(ranks);
  int64_t batch = 0;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int64_t budget = deployment_.prefill.max_tokens_per_step - ranks[i].positions();
    group_tokens += packed.emplace_back(pack_chunks(prompts, i, budget, &chunks)).tokens;
    batch += ranks[i].sequences;
  }
  const int64_t group_tokens_per_rank = per_rank(group_tokens, inst.ranks.size());
  std::vector<int64_t> drafts(inst.ranks.size(), 0);
  StepTimeCache::DecodeStep slowest;
  slowest.us = 0;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i].sequences > 0) drafts[i] = ranks[i].plain.drafts;
    const StepTimeCache::DecodeStep step =
        rank_mixed_step(ranks[i], packed[i], group_tokens_per_rank, !chunks.empty());
    if (step.us > slowest.us) slowest = step;  // the slowest rank sets the step
  }
  inst.engine->busy = true;
  if (measuring()) {
    ++result_.decode_steps;
    if (!chunks.empty()) ++result_.mixed_steps;
    if (slowest.micro_batches > 1) ++result_.decode_steps_split;
    decode_band_.add(slowest.band, slowest.us);
    add_decode_imbalance(inst, slowest.us);
  }
  log_step(chunks.empty() ? StepRecord::Kind::kDecode : StepRecord::Kind::kMixed, false, index, ranks, drafts,
           chunks, slowest.us, slowest.communication_us, slowest.micro_batches);
  trace_span(TraceSpan::Kind::kDecodeStep, static_cast<int64_t>(index), sim_.now(),
             sim_.now() + SimTime::from_us(slowest.us), batch);
  sim_.schedule_after(SimTime::from_us(slowest.us),
                      [this, index, credit = credit_at_step_start(inst, std::move(drafts)),
                       chunks = std::move(chunks), communication_us = slowest.communication_us] {
                        // Both halves are credited before the engine takes its next step.
                        emit_decode_tokens(index, credit, communication_us);
                        complete_prefill_chunks(index, chunks, communication_us);
                        decode_[index]->engine->busy = false;
                        next_step(index);
                      });
}

void ServingSimulation::add_decode_imbalance(const DecodeInstance& inst, double step_us) {
  std::size_t busiest = 0;
  std::size_t sequences = 0;
  for (const DecodeRank& rank : inst.ranks) {
    busiest = std::max(busiest, rank.active.size());
    sequences += rank.active.size();
  }
  if (sequences == 0) return;  // a step of prompts alone
  const std::size_t even = (sequences + inst.ranks.size() - 1) / inst.ranks.size();
  imbalance_time_us_ += step_us * static_cast<double>(busiest) / static_cast<double>(even);
  decode_time_us_ += step_us;
}

void ServingSimulation::finish(Request& r) {
  r.finished = sim_.now();
  if (in_window(r)) {
    ++result_.finished;
    result_.output_tokens_of_finished += r.output_tokens;
  }
  trace_span(TraceSpan::Kind::kRequest, r.id, r.arrival, r.finished, r.output_tokens);
  trace_span(TraceSpan::Kind::kRequestPrefill, r.id, r.prefill_started, r.prefilled, r.output_tokens);
  if (r.output_tokens > 1) {
    if (r.transfer_us > 0) {
      trace_span(TraceSpan::Kind::kRequestKvTransfer, r.id,
                 r.decode_started - SimTime::from_us(r.transfer_us), r.decode_started, r.output_tokens);
    }
    trace_span(TraceSpan::Kind::kRequestDecode, r.id, r.decode_started, r.finished, r.output_tokens);
  }
  change_in_system(-1);
  Session& s = sessions_[static_cast<std::size_t>(r.session)];
  if (r.blocks != nullptr) return;  // its blocks were persisted once prefilled
  if (s.from_trace) {
    tiers_.store(r.session, r.final_context(), sim_.now());
    trace_turn_ended(r.session);
    return;
  }
  if (s.next_turn >= s.turns || !accepting_) {
    tiers_.forget(r.session);
    session_ended();
    return;
  }
  tiers_.store(r.session, r.final_context(), sim_.now());
  sim_.schedule_after(SimTime::from_s(r.think_after_s),
                      [this, &r] { start_turn(r.session, r.final_context()); });
}

}  // namespace v41sim
