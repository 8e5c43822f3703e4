// ServingSimulation, prefill: routing to an instance, packing chunks per rank,
// and handing finished prompts to decode.
#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/serving/serving_entities.h"

namespace v41sim {
void ServingSimulation::route_turn(Request& r) {
  // A rank holds the KV of its sequences' whole final context; one that no
  // rank could ever hold is turned away before any prefill is spent on it.
  r.kv_reserved_bytes = model_.kv.session_bytes(r.final_context());
  if (r.kv_reserved_bytes > decode_kv_bytes_per_gpu_) {
    reject(r, "final context does not fit in one decode GPU's KV memory");
    return;
  }
  if (deployment_.disaggregated && model_.kv.session_bytes(r.context()) > prefill_kv_bytes_per_gpu_) {
    reject(r, "prompt does not fit in one prefill GPU's KV memory");
    return;
  }
  const auto [best, rank] = route_prompt();
  PrefillInstance& inst = *prefill_[best];
  r.prefill_instance = inst.index;
  r.attention_rank = static_cast<int>(rank);
  PrefillRank& own = inst.ranks[rank];
  ++own.reading;
  own.tokens_left += r.to_compute - r.computed;
  own.queued_context += r.context();
  // The SSD tier's client on the rank's node reads the cached prefix, first
  // come first served (a KV-aware router picks the worker, which then loads
  // the prefix from the store, as Mooncake and Dynamo do).
  const double seconds = static_cast<double>(r.cached_tokens) * model_.kv.global_bytes_per_token /
                         deployment_.kv.ssd_read_bytes_per_s.value();
  const auto node = static_cast<std::size_t>(static_cast<int64_t>(rank) / prefill_gpus_per_node());
  const SimTime read_done = queue_for(inst.ssd_free_at[node], seconds);
  if (measuring()) ssd_read_seconds_ += seconds;
  r.ssd_read_us = (read_done - sim_.now()).us();
  sim_.schedule_at(read_done, [this, &r] { enqueue_prefill(r); });
}

void ServingSimulation::enqueue_prefill(Request& r) {
  r.prefill_queued = sim_.now();
  PrefillInstance& inst = *prefill_[static_cast<std::size_t>(r.prefill_instance)];
  PrefillRank& own = prefill_rank_of(r);
  --own.reading;
  // A prompt is underway once a chunk of it has run.
  const auto underway = [](const Request& q) { return q.computed > 0; };
  join_by_priority(inst.queue, &r, underway);
  join_by_priority(own.queue, &r, underway);
  if (deployment_.mixes_prompt_chunks()) {
    try_start_mixed_step(static_cast<std::size_t>(inst.index));
  } else {
    try_start_prefill(static_cast<std::size_t>(inst.index));
  }
}

// The instance, then its rank: the least loaded, or the next in turn.
std::pair<std::size_t, std::size_t> ServingSimulation::route_prompt() {
  if (deployment_.routing == DeploymentSpec::Routing::kRoundRobin) {
    const std::size_t instance = next_instance_++ % prefill_.size();
    return {instance, prefill_[instance]->next_rank++ % prefill_[instance]->ranks.size()};
  }
  const std::size_t instance =
      least_loaded(prefill_.size(), [this](std::size_t i) { return routing_load(*prefill_[i]); });
  const PrefillInstance& inst = *prefill_[instance];
  return {instance,
          least_loaded(inst.ranks.size(), [this, &inst](std::size_t k) { return rank_load(inst, k); })};
}

// A rank's load. Least requests: 4 x its waiting prompts (queued or reading
// their prefix) + its decoding sequences (vLLM's data-parallel balancer).
// Least load: the prompt tokens it has still to compute plus the tokens of KV
// its requests hold: queued or reading prompts at their whole context; prompts done and waiting to be shipped
// (disaggregated); decoding sequences at their history (aggregated). The two
// weigh alike, as NVIDIA Dynamo's KV router costs a worker (prefill blocks
// plus active blocks, its default overlap weight 1). By prompt tokens alone,
// every prompt that arrives while no queue holds a token would go to the
// first instance and rank, however many sequences it decodes or how much KV
// it holds.
double ServingSimulation::rank_load(const PrefillInstance& inst, std::size_t rank) const {
  const PrefillRank& own = inst.ranks[rank];
  if (deployment_.routing == DeploymentSpec::Routing::kLeastRequests) {
    const double waiting = static_cast<double>(own.queue.size()) + static_cast<double>(own.reading);
    const double running =
        inst.colocated == nullptr ? 0.0 : static_cast<double>(inst.colocated->ranks[rank].active.size());
    return 4 * waiting + running;
  }
  const int64_t held =
      inst.colocated == nullptr ? own.shipping_tokens : inst.colocated->ranks[rank].history_tokens;
  return static_cast<double>(own.tokens_left + own.queued_context + held);
}

double ServingSimulation::routing_load(const PrefillInstance& inst) const {
  double load = 0;
  for (std::size_t k = 0; k < inst.ranks.size(); ++k) load += rank_load(inst, k);
  return load;
}

void ServingSimulation::try_start_prefill(std::size_t index) {
  PrefillInstance& inst = *prefill_[index];
  if (inst.engine->busy || inst.queue.empty()) return;
  const int64_t cp_min = deployment_.prefill.context_parallel_min_tokens;
  if (Request& head = *inst.queue.front(); cp_min > 0 && head.to_compute - head.computed >= cp_min) {
    if (hold_context_parallel_kv(inst, head)) start_context_parallel_step(index, head);
    return;
  }
  if (holds_prompts_for_other_ranks(inst)) return;  // a decode step runs instead
  // Each rank packs its queued prompts (one chunk each) up to its token budget.
  std::vector<PrefillChunk> chunks;
  std::vector<RankChunks> packed(inst.ranks.size());
  std::vector<bool> prompting(inst.ranks.size(), false);
  for (std::size_t rank = 0; rank < inst.ranks.size(); ++rank) {
    packed[rank] = pack_chunks(inst, rank, deployment_.prefill.max_tokens_per_step, &chunks);
    prompting[rank] = packed[rank].prompts > 0;  // else nothing queued, or its head waits for KV room
  }
  if (chunks.empty()) return;
  // The experts take the tokens of every rank, the decode beside the prompts included.
  const std::vector<RankDecode> beside =
      inst.colocated != nullptr ? rank_decodes(*inst.colocated, prompting) : std::vector<RankDecode>{};
  const int64_t decode_tokens = decoding_positions(beside);
  int64_t group_tokens = decode_tokens;
  for (const RankChunks& p : packed) group_tokens += p.tokens;
  const int64_t group_tokens_per_rank = per_rank(group_tokens, inst.ranks.size());
  const GroupDecode decode =
      inst.colocated != nullptr ? decode_in_group(beside, group_tokens_per_rank, true) : GroupDecode{};
  StepTimeCache::StepCost slowest;
  for (const RankChunks& p : packed) {
    if (p.prompts == 0) continue;
    const StepTimeCache::StepCost cost = steps_->prefill_step(p.prompts, p.mean_new_tokens, p.mean_context,
                                                              p.continuing, group_tokens_per_rank);
    if (cost.us > slowest.us) slowest = cost;  // the slowest rank sets the step and its communication share
  }
  if (measuring() && decode_tokens > 0) {
    ++result_.prefill_steps_with_decode;
    if (decode.slowest.us > slowest.us) ++result_.prefill_steps_set_by_decode;
  }
  if (decode.slowest.us > slowest.us) slowest = decode.slowest;
  log_step(StepRecord::Kind::kPrefill, true, index, beside, decode.drafts, chunks, slowest.us,
           slowest.communication_us, slowest.micro_batches);
  run_prefill_step(index, std::move(chunks), slowest,
                   inst.colocated != nullptr ? credit_at_step_start(*inst.colocated, std::move(decode.drafts))
                                             : DecodeCredit{});
}

int64_t ServingSimulation::per_rank(int64_t group_tokens, std::size_t ranks) {
  const auto n = static_cast<int64_t>(ranks);
  return (group_tokens + n - 1) / n;
}

bool ServingSimulation::holds_prompts_for_other_ranks(PrefillInstance& inst) {
  if (inst.colocated == nullptr || inst.held_steps >= deployment_.prefill_delay_steps) return false;
  const bool every_rank_waits = std::all_of(inst.ranks.begin(), inst.ranks.end(),
                                            [](const PrefillRank& r) { return !r.queue.empty(); });
  const std::vector<DecodeRank>& decode = inst.colocated->ranks;
  const bool decoding =
      std::any_of(decode.begin(), decode.end(), [](const DecodeRank& r) { return !r.active.empty(); });
  if (every_rank_waits || !decoding) return false;  // nothing to wait for, or nothing to run meanwhile
  ++inst.held_steps;
  if (measuring()) ++result_.prefill_delays;
  return true;
}

std::vector<ServingSimulation::RankDecode> ServingSimulation::rank_decodes(
    const DecodeInstance& inst, const std::vector<bool>& prompting) {
  std::vector<RankDecode> out(inst.ranks.size());
  for (std::size_t i = 0; i < inst.ranks.size(); ++i) {
    const DecodeRank& rank = inst.ranks[i];
    if ((!prompting.empty() && prompting[i]) || rank.active.empty()) continue;
    RankDecode& d = out[i];
    d.sequences = static_cast<int64_t>(rank.active.size());
    d.history = rank.mean_history();
    d.plain = steps_->decode_step(d.sequences, d.history);
  }
  return out;
}

int64_t ServingSimulation::decoding_positions(const std::vector<RankDecode>& ranks) {
  int64_t positions = 0;
  for (const RankDecode& d : ranks) positions += d.positions();
  return positions;
}

bool ServingSimulation::hold_kv(PrefillInstance& inst, Request& r) {
  if (inst.colocated == nullptr) return hold_prefill_kv(inst, r);
  if (r.decode_rank >= 0) return true;
  DecodeRank& rank = inst.colocated->ranks[static_cast<std::size_t>(r.attention_rank)];
  if (!rank.has_room_for(r, decode_kv_bytes_per_gpu_, deployment_.decode.max_batch_per_gpu)) return false;
  ++rank.arriving;
  rank.kv_used += r.kv_reserved_bytes;
  r.decode_instance = r.prefill_instance;
  r.decode_rank = r.attention_rank;
  return true;
}

bool ServingSimulation::hold_prefill_kv(PrefillInstance& inst, Request& r) {
  if (r.prefill_kv_bytes > 0) return true;
  const double bytes = model_.kv.session_bytes(r.context());
  double& used = inst.ranks[static_cast<std::size_t>(r.attention_rank)].kv_used;
  if (used + bytes > prefill_kv_bytes_per_gpu_) return false;
  used += bytes;
  r.prefill_kv_bytes = bytes;
  return true;
}

bool ServingSimulation::hold_context_parallel_kv(PrefillInstance& inst, Request& r) {
  if (inst.colocated != nullptr) return hold_gathered_copies(inst, r);
  if (r.context_parallel) return true;  // every rank holds it already
  const double bytes = model_.kv.session_bytes(r.context());
  // What each rank must add: the whole prompt, less what its attention rank holds already.
  const auto more = [&](std::size_t k) {
    return bytes - (static_cast<int>(k) == r.attention_rank ? r.prefill_kv_bytes : 0.0);
  };
  for (std::size_t k = 0; k < inst.ranks.size(); ++k) {
    if (inst.ranks[k].kv_used + more(k) > prefill_kv_bytes_per_gpu_) return false;
  }
  for (std::size_t k = 0; k < inst.ranks.size(); ++k) inst.ranks[k].kv_used += more(k);
  r.prefill_kv_bytes = bytes;  // on each rank
  r.context_parallel = true;
  return true;
}

bool ServingSimulation::hold_gathered_copies(PrefillInstance& inst, Request& r) {
  if (!hold_kv(inst, r)) return false;
  if (r.prefill_kv_bytes > 0) return true;  // gathered already
  const double bytes = model_.kv.session_bytes(r.context());
  std::vector<DecodeRank>& ranks = inst.colocated->ranks;
  const auto other = [&r](std::size_t k) { return static_cast<int>(k) != r.attention_rank; };
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    if (other(k) && ranks[k].kv_used + bytes > decode_kv_bytes_per_gpu_) return false;
  }
  for (std::size_t k = 0; k < ranks.size(); ++k) {
    if (other(k)) ranks[k].kv_used += bytes;
  }
  r.prefill_kv_bytes = bytes;
  return true;
}

void ServingSimulation::release_prefill_kv(Request& r) {
  if (r.prefill_kv_bytes <= 0) return;
  PrefillInstance& inst = *prefill_[static_cast<std::size_t>(r.prefill_instance)];
  if (inst.colocated != nullptr) {  // aggregated: the other ranks' gathered copies
    for (std::size_t k = 0; k < inst.colocated->ranks.size(); ++k) {
      if (static_cast<int>(k) != r.attention_rank) inst.colocated->ranks[k].kv_used -= r.prefill_kv_bytes;
    }
  } else if (r.context_parallel) {
    for (PrefillRank& rank : prefill_[static_cast<std::size_t>(r.prefill_instance)]->ranks)
      rank.kv_used -= r.prefill_kv_bytes;
  } else {
    prefill_rank_of(r).kv_used -= r.prefill_kv_bytes;
  }
  r.prefill_kv_bytes = 0;
}

ServingSimulation::PrefillRank& ServingSimulation::prefill_rank_of(const Request& r) {
  return prefill_[static_cast<std::size_t>(r.prefill_instance)]
      ->ranks[static_cast<std::size_t>(r.attention_rank)];
}

void ServingSimulation::start_decoding_held(DecodeInstance& inst, Request& r) {
  DecodeRank& rank = inst.ranks[static_cast<std::size_t>(r.decode_rank)];
  --rank.arriving;
  if (r.generated == r.output_tokens) {  // nothing to decode: the KV is given back
    rank.kv_used -= r.kv_reserved_bytes;
    return;
  }
  r.decode_queued = sim_.now();
  r.decode_admitted = sim_.now();
  r.decode_started = sim_.now();
  rank.start_decoding(&r);
}

ServingSimulation::RankChunks ServingSimulation::pack_chunks(PrefillInstance& inst, std::size_t rank,
                                                             int64_t budget,
                                                             std::vector<PrefillChunk>* chunks) {
  int64_t n = 0;
  int64_t continuing = 0;
  double new_sum = 0;
  double end_sum = 0;
  for (Request* r : inst.ranks[rank].queue) {
    if (budget <= 0) break;
    if (!hold_kv(inst, *r)) break;  // first come, first served: the head waits for KV room
    const int64_t left = r->to_compute - r->computed;
    const int64_t tokens = std::min(budget, left);
    if (tokens < left) ++continuing;
    if (r->computed == 0) r->prefill_started = sim_.now();
    budget -= tokens;
    chunks->push_back({r, tokens});
    ++n;
    new_sum += static_cast<double>(tokens);
    end_sum += static_cast<double>(r->context() - r->to_compute + r->computed + tokens);
  }
  if (n == 0) return {};
  const double dn = static_cast<double>(n);
  return {n, static_cast<int64_t>(std::ceil(new_sum / dn)), static_cast<int64_t>(std::ceil(end_sum / dn)),
          continuing, static_cast<int64_t>(new_sum)};
}

// Every rank takes a consecutive slice of the prompt. Causal attention needs
// the slices before it, so the ranks exchange this step's new KV over NVLink
// (a ring all-gather: each receives the other ranks' slices; V4.1's
// compressed KV is ~890 B per token, so this is small next to the compute).
// The last slice attends to the longest context and sets the step.
void ServingSimulation::start_context_parallel_step(std::size_t index, Request& r) {
  const int64_t ranks = deployment_.prefill.attention_ranks();
  const int64_t left = r.to_compute - r.computed;
  const int64_t per_rank = std::min(deployment_.prefill.max_tokens_per_step, (left + ranks - 1) / ranks);
  const int64_t tokens = std::min(left, per_rank * ranks);
  if (r.computed == 0) r.prefill_started = sim_.now();
  r.context_parallel = true;
  const int64_t end = r.context() - r.to_compute + r.computed + tokens;
  // Only the last slice's rank runs CED's decoder rows, and only in the
  // prompt's last step: the slowest rank is timed as that one.
  const StepTimeCache::StepCost cost = steps_->prefill_step(1, per_rank, end, tokens < left ? 1 : 0);
  const double exchange_bytes = model_.kv.global_bytes_per_token * static_cast<double>(tokens) *
                                static_cast<double>(ranks - 1) / static_cast<double>(ranks);
  const double exchange_us = exchange_bytes / prefill_nvlink_bytes_per_s_ * 1e6;
  if (measuring()) ++result_.context_parallel_steps;
  const StepTimeCache::StepCost step{cost.us + exchange_us, cost.communication_us + exchange_us, cost.band,
                                     cost.micro_batches};
  std::vector<PrefillChunk> chunk{{&r, tokens}};
  log_step(StepRecord::Kind::kContextParallel, true, index, {}, {}, chunk, step.us, step.communication_us,
           step.micro_batches);
  run_prefill_step(index, std::move(chunk), step, {});
}

void ServingSimulation::run_prefill_step(std::size_t index, std::vector<PrefillChunk> chunks,
                                         const StepTimeCache::StepCost& step, DecodeCredit decode_credit) {
  PrefillInstance& inst = *prefill_[index];
  inst.engine->busy = true;
  inst.held_steps = 0;
  if (measuring()) {
    ++result_.prefill_steps;
    if (step.micro_batches > 1) ++result_.prefill_steps_split;
    prefill_band_.add(step.band, step.us);
  }
  trace_span(TraceSpan::Kind::kPrefillStep, static_cast<int64_t>(index), sim_.now(),
             sim_.now() + SimTime::from_us(step.us), static_cast<int64_t>(chunks.size()));
  sim_.schedule_after(SimTime::from_us(step.us),
                      [this, index, chunks = std::move(chunks), decode_credit = std::move(decode_credit),
                       communication_us = step.communication_us] {
                        prefill_[index]->engine->busy = false;
                        // The ranks that decoded beside the prompts are credited first, as a mixed step's
                        // are.
                        if (!decode_credit.sequences.empty())
                          emit_decode_tokens(index, decode_credit, communication_us);
                        complete_prefill_chunks(index, chunks, communication_us);
                        if (deployment_.disaggregated) {
                          try_start_prefill(index);
                        } else {
                          next_step(index);
                        }
                      });
}

void ServingSimulation::complete_prefill_chunks(std::size_t index, const std::vector<PrefillChunk>& chunks,
                                                double communication_us) {
  PrefillInstance& p = *prefill_[index];
  for (const PrefillChunk& c : chunks) {
    Request& r = *c.request;
    r.communication_us += communication_us;
    r.computed += c.tokens;
    PrefillRank& own = prefill_rank_of(r);
    own.tokens_left -= c.tokens;
    if (counts_tokens_of(r)) result_.input_tokens_prefilled += c.tokens;
    if (r.computed < r.to_compute) continue;
    p.queue.erase(std::find(p.queue.begin(), p.queue.end(), &r));
    own.queue.erase(std::find(own.queue.begin(), own.queue.end(), &r));
    own.queued_context -= r.context();
    r.prefilled = sim_.now();
    // A block-hashed prompt's KV is persisted once prefilled, as Mooncake's
    // store writes a prompt's blocks to its pool: a prompt sharing them finds them from now on.
    if (r.blocks != nullptr) tiers_.store_blocks(*r.blocks, workload_.trace_block_tokens, sim_.now());
    r.generated = 1;
    credit_output_tokens(r, 1);
    if (p.colocated != nullptr) {
      release_prefill_kv(r);                 // context-parallel: the other ranks' gathered copies
      start_decoding_held(*p.colocated, r);  // the KV is already where it decodes
    }
    if (r.generated == r.output_tokens) {
      release_prefill_kv(r);
      finish(r);
      continue;
    }
    if (p.colocated != nullptr) continue;
    own.shipping_tokens += r.context();
    enqueue_decode(r);  // its KV waits here until a decode rank has room for it
  }
}

}  // namespace v41sim
