#include "sim/report/step_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/cost/error_band.h"
#include "sim/graph/expert_load.h"
#include "sim/graph/residual_mixing.h"
#include "sim/graph/tensor_parallel.h"
#include "sim/report/error_band_view.h"

namespace v41sim {
namespace {

std::string overlap_note(const StepGraph& g) {
  if (g.micro_batches > 1) {
    return fmt::format(
        "two-micro-batch overlap: {} micro-batches take turns, one's EP transfers running while the other "
        "computes, each kernel after the one before it in its own micro-batch (a layer lasts at least the "
        "busier track over both, more where a transfer has no compute of the other to hide behind), and "
        "kernels whose time does not shrink with their tokens (weight reads at small batch, a transfer's "
        "fixed cost) run once per micro-batch; "
        "per-kernel rows are one micro-batch's{}; host copies on their own engine",
        g.micro_batches,
        g.second_layers.empty()
            ? ""
            : " (the larger: the batch splits unevenly, and the totals count the other's own kernels)");
  }
  if (g.shape.overlap_communication) {
    return "overlap asked, but a single decode sequence does not split into micro-batches: EP communication "
           "runs after compute; host copies on their own engine";
  }
  return "EP communication is not overlapped with compute; host copies run on their own engine";
}

// How the routed tokens fall over the EP ranks, which every MoE layer waits for the busiest of.
std::string routing_note(const StepShape& s) {
  if (!s.routed_by_chance)
    return "routing balanced by construction: every EP rank receives exactly its share of the routed tokens "
           "(--balanced-routing)";
  return std::string(kChanceRoutingAssumption) + " (--routing-skew)";
}

std::string title(const StepReport& r) {
  const StepShape& s = r.graph.shape;
  std::string out = fmt::format("{} on {}: {} step, batch {}, context {}, EP {}", r.model.spec.name,
                                r.gpu.name, phase_name(s.phase), s.batch, s.context, s.ep);
  if (s.redundant_experts > 0) out += fmt::format(" with {} redundant experts", s.redundant_experts);
  if (s.attention_tp > 1) out += fmt::format(", attention TP {} (one GPU of the rank)", s.attention_tp);
  if (s.ep_load_imbalance != 1.0) out += fmt::format(", busiest rank {:.3f}x the mean", s.ep_load_imbalance);
  if (s.expert_token_share != 1.0) {
    out += fmt::format(", the experts taking {:.3g} of the rows every rank running this {} would give",
                       s.expert_token_share, s.phase == Phase::kPrefill ? "step's prompts" : "batch");
  }
  if (s.is_mixed()) {
    out += fmt::format(", with {} prompt chunks of {} tokens ending at {}", s.mixed_prefill.batch,
                       s.mixed_prefill.new_tokens, s.mixed_prefill.context);
  } else if (s.phase == Phase::kPrefill && s.new_tokens > 0 && s.new_tokens < s.context) {
    out += fmt::format(", chunks of {} new tokens each", s.new_tokens);
  }
  const int64_t continuing = s.is_mixed() ? s.mixed_prefill.continuing : s.continuing;
  if (continuing > 0) out += fmt::format(" ({} not their prompt's last)", continuing);
  if (s.beside_prompts) out += ", beside another rank's prompt step";
  return out;
}

double tflops(double flops, double us) { return us > 0 ? flops / us / 1e6 : 0; }
double gbps(double bytes, double us) { return us > 0 ? bytes / us / 1e3 : 0; }

// Layers whose kernels and times are identical collapse into one row (times
// within rounding: a layer's time is the difference of two points on the
// step's timeline, which differ in their last bits from layer to layer).
struct LayerGroup {
  std::vector<int64_t> layers;
  std::size_t first = 0;  // index into graph.layers
  double time_us = 0;     // over its layers
};

std::vector<LayerGroup> group_layers(const StepTiming& t) {
  std::vector<LayerGroup> groups;
  for (std::size_t i = 0; i < t.layers.size(); ++i) {
    const LayerTiming& l = t.layers[i];
    auto same = [&](const LayerGroup& g) {
      const LayerTiming& o = t.layers[g.first];
      return o.mode == l.mode && o.tokens == l.tokens &&
             std::abs(o.critical_us - l.critical_us) <= 1e-9 * std::max(o.critical_us, l.critical_us) &&
             o.kernels.size() == l.kernels.size();
    };
    auto it = std::find_if(groups.begin(), groups.end(), same);
    if (it == groups.end()) {
      groups.push_back({{l.layer}, i, l.critical_us});
    } else {
      it->layers.push_back(l.layer);
      it->time_us += l.critical_us;
    }
  }
  return groups;
}

nlohmann::json kernel_json(const Kernel& k, const KernelTiming& t, double start_us) {
  nlohmann::json j = {{"name", k.name},
                      {"class", std::string(class_key(k.kernel_class))},
                      {"math", std::string(math_name(k.math))},
                      {"shape", {k.shape.m, k.shape.n, k.shape.k, k.shape.batch}},
                      {"start_us", start_us},
                      {"time_us", t.time_us},
                      {"busy_us", t.busy_us},
                      {"overhead_us", t.overhead_us},
                      {"roofline_us", t.roofline_us},
                      {"tiles", t.tiles},
                      {"waves", t.waves},
                      {"flops", k.flops},
                      {"hbm_bytes", k.hbm_bytes},
                      {"link_bytes", k.link_bytes},
                      {"achieved_tflops", tflops(k.flops, t.time_us)},
                      {"achieved_gbps", gbps(k.hbm_bytes, t.time_us)},
                      {"bound", std::string(bound_name(t.bound))},
                      {"math_us", t.math_us},
                      {"memory_us", t.memory_us},
                      {"edge_us", t.edge_us},
                      {"widening_us", t.widening_us},
                      {"fold_us", t.fold_us},
                      {"pipeline_us", t.pipeline_us},
                      {"widened_ahead", t.widened_ahead},
                      {"fp4_at_fp8_rate", t.math_fallback}};
  if (t.tile_m > 0) j["tile"] = fmt::format("{}x{}", t.tile_m, t.tile_n);  // transfers have none
  return j;
}

void add_kernel_events(nlohmann::json& events, const LayerTiming& l, const LayerKernels& lk,
                       const std::vector<KernelTiming>& timings, const std::vector<double>& starts,
                       int micro_batch) {
  for (std::size_t j = 0; j < lk.kernels().size(); ++j) {
    const Kernel& k = lk.kernels()[j];
    const KernelTiming& kt = timings[j];
    nlohmann::json args = {{"layer", l.layer},
                           {"mode", l.mode},
                           {"class", std::string(class_key(k.kernel_class))},
                           {"tiles", kt.tiles},
                           {"waves", kt.waves},
                           {"flops", k.flops},
                           {"hbm_bytes", k.hbm_bytes},
                           {"bound", std::string(bound_name(kt.bound))}};
    if (micro_batch > 0) args["micro_batch"] = micro_batch;
    events.push_back({{"name", micro_batch > 1 ? k.name + " (micro-batch 2)" : k.name},
                      {"cat", fmt::format("layer {} {}", l.layer, l.mode)},
                      {"ph", "X"},
                      {"pid", 1},
                      {"tid", static_cast<int>(k.stream)},
                      {"ts", starts[j]},
                      {"dur", kt.time_us},
                      {"args", args}});
  }
}

// Where two micro-batches' layout falls between its bounds: each layer's
// busier track summed (what perfect hiding would give) and both tracks one
// after the other (no hiding at all).
struct OverlapBounds {
  double busier_track_us = 0;
  double one_after_another_us = 0;
};
OverlapBounds overlap_bounds(const StepTiming& t) {
  OverlapBounds b;
  for (const LayerTiming& l : t.layers) {
    b.busier_track_us += std::max(l.compute_us, l.communication_us);
    b.one_after_another_us += l.compute_us + l.communication_us;
  }
  return b;
}

}  // namespace

double time_bound_by(const StepTiming& t, Bound bound) {
  double total = 0;
  for (const LayerTiming& l : t.layers) {
    for (const KernelTiming& k : l.kernels) total += k.bound == bound ? k.time_us : 0.0;
  }
  return total;
}

namespace {
CudaCoreShare cuda_core_share(const StepTiming& t, double KernelTiming::*work, Bound bound) {
  CudaCoreShare share;
  for (const LayerTiming& l : t.layers) {
    for (const KernelTiming& k : l.kernels) share.work_us += k.*work;
  }
  share.bound_us = time_bound_by(t, bound);
  return share;
}
}  // namespace

CudaCoreShare widening_share(const StepTiming& t) {
  return cuda_core_share(t, &KernelTiming::widening_us, Bound::kWidening);
}

std::string fold_note(const CostParams& p) {
  const SourcedValue& rate = p.widening.compare_ops_per_clock;
  const auto& efficiency = p.of(KernelClass::kIndexer).fold_efficiency;
  if (!efficiency) return "";
  return fmt::format(
      "the indexer's fold: each head's score of a (query, position) pair through a max and a "
      "multiply-add on the CUDA cores, beside the tensor math, at {:g} compares a clock per SM ({}) and "
      "{:g} of that pace ({})",
      rate.value(), rate.provenance().label(), efficiency->value(), efficiency->provenance().label());
}

CudaCoreShare fold_share(const StepTiming& t) {
  return cuda_core_share(t, &KernelTiming::fold_us, Bound::kFold);
}

std::string phase_name(Phase phase) { return phase == Phase::kPrefill ? "prefill" : "decode"; }

// The step's sequences' KV against what one GPU keeps for it: a shape
// outside the GPU is timed all the same, and the row says so.
std::string kv_memory_phrase(const StepMemory& m) {
  const FitResult& f = m.fit;
  if (f.kv_bytes_per_gpu <= 0) {
    return fmt::format(
        "{}, but the weights alone ({}) and the reserve ({}) overflow the GPU's {} at EP {}: timed as if "
        "they fit",
        format_bytes(m.kv_bytes), format_bytes(f.weight_bytes_per_gpu), format_bytes(f.reserve_bytes_per_gpu),
        format_bytes(f.hbm_bytes_per_gpu), m.request.ep);
  }
  const std::string held =
      fmt::format("{} sequences of {} tokens fit", f.sessions_per_gpu, m.request.context_tokens);
  if (m.fits()) {
    return fmt::format("{} of the {} one GPU keeps for KV ({:.0f}%; {})", format_bytes(m.kv_bytes),
                       format_bytes(f.kv_bytes_per_gpu), 100.0 * m.kv_bytes / f.kv_bytes_per_gpu, held);
  }
  return fmt::format("{}: more than the {} one GPU keeps for KV ({}): timed as if it fit",
                     format_bytes(m.kv_bytes), format_bytes(f.kv_bytes_per_gpu), held);
}

// The residual streams the step's widest layer holds against the reserve
// `fit` keeps for activations: a floor, before any layer's own buffers.
std::string residual_memory_phrase(const StepMemory& m) {
  const double reserve = m.fit.reserve_bytes_per_gpu;
  const std::string held =
      fmt::format("{:.0f} tokens x {} = {}", m.residual_rows, format_bytes(m.residual_bytes_per_token),
                  format_bytes(m.residual_stream_bytes()));
  if (m.activations_fit()) {
    return fmt::format("{}, {:.1f}% of the {} reserve for activations", held,
                       100.0 * m.residual_stream_bytes() / reserve, format_bytes(reserve));
  }
  return fmt::format(
      "{}: more than the {} reserve for activations before any layer's own buffers: timed as if it fit "
      "(serving runs chunk prompts to their max_tokens_per_step)",
      held, format_bytes(reserve));
}

nlohmann::json kv_memory_json(const StepMemory& m) {
  return {{"kv_bytes", m.kv_bytes},
          {"kept_for_kv_bytes", m.fit.kv_bytes_per_gpu},
          {"residual_stream_bytes", m.residual_stream_bytes()},
          {"reserve_bytes", m.fit.reserve_bytes_per_gpu},
          {"sequences_held_at_context", m.fit.sessions_per_gpu},
          {"fits", m.fits()},
          {"activations_fit", m.activations_fit()}};
}

std::vector<ModeTime> time_by_mode(const StepTiming& timing) {
  std::vector<ModeTime> modes;
  for (const LayerTiming& l : timing.layers) {
    auto it = std::find_if(modes.begin(), modes.end(), [&](const ModeTime& m) { return m.mode == l.mode; });
    if (it == modes.end()) it = modes.insert(modes.end(), ModeTime{l.mode, 0, 0});
    ++it->layers;
    it->time_us += l.critical_us;
  }
  return modes;
}

// A decode step's speculative decoding: the drafts each sequence verifies,
// why that many, and what a sequence can expect from the step.
void add_draft_rows(const StepReport& r, Table& summary) {
  const std::optional<DraftSpec>& draft = r.model.spec.draft;
  const DraftChoice& d = r.drafts;
  using From = StepReport::DraftsFrom;
  const std::string why = !draft                                   ? "the model has no draft"
                          : r.drafts_from == From::kGiven          ? "--drafts"
                          : r.drafts_from == From::kSpeculationOff ? "--no-draft"
                          : !draft->acceptance.known()
                              ? "the draft's acceptance is not known"
                              : fmt::format(
                                    "of the draft's block of {}, the count that gives the "
                                    "most expected tokens per second, as serving runs "
                                    "choose it; --drafts sets it",
                                    draft->block_size);
  summary.add_row({"draft tokens verified per sequence", fmt::format("{} ({})", d.drafts, why)});
  const double per_token_us = r.timing.total_us / d.tokens_per_sequence;
  summary.add_row({"expected tokens per sequence; time per output token",
                   d.drafts == 0 ? fmt::format("1; {:.1f} us", per_token_us)
                                 : fmt::format("{:.2f} at {}; {:.1f} us", d.tokens_per_sequence,
                                               draft_acceptance_phrase(r.model.spec), per_token_us)});
}

namespace {

std::string memory_note(const StepMemory& m) {
  const FitRequest& r = m.request;
  const std::string replicas =
      r.redundant_experts > 0 ? fmt::format(", {} redundant experts", r.redundant_experts) : std::string();
  return fmt::format(
      "KV held: each sequence's global KV at its context, and its window and compressor state (derived); "
      "kept for KV: the GPU's HBM less its weights at EP {}{} (dense weights {}{}) and its reserve ({}); "
      "v41sim fit shows the split; residual streams: what each token of the layer running the most rows "
      "carries between layers (mHC's streams, or the one residual, in BF16), a floor under the step's "
      "activations, which the reserve holds",
      r.ep, replicas, placement_name(r.dense_placement),
      r.attention_tp > 1 ? fmt::format(", split by heads over the rank's {} GPUs", r.attention_tp) : "",
      r.reserve_fraction.provenance().label());
}

}  // namespace

std::vector<Table> step_tables(const StepReport& r) {
  const StepTiming& t = r.timing;
  Table summary(title(r), {"quantity", "value"});
  summary.add_row({"step time", fmt::format("{:.1f} us", t.total_us)});
  summary.add_row(
      {"compute / EP communication / host copy",
       fmt::format("{:.1f} / {:.1f} / {:.1f} us", t.compute_us, t.communication_us, t.host_copy_us)});
  if (r.graph.micro_batches > 1) {
    const OverlapBounds bounds = overlap_bounds(t);
    summary.add_row({"two micro-batches: each layer's busier track / laid out / one after the other",
                     fmt::format("{:.1f} / {:.1f} / {:.1f} us", bounds.busier_track_us, t.total_us,
                                 bounds.one_after_another_us)});
  }
  if (r.graph.shape.phase == Phase::kDecode) add_draft_rows(r, summary);
  summary.add_row({"kernels", std::to_string(t.kernel_count)});
  const CudaCoreShare widening = widening_share(t);
  summary.add_row(
      {"widening narrow operands (CUDA cores)",
       fmt::format(
           "{:.1f} us if alone (hidden where memory or math take longer); {:.1f} us in kernels it bounds",
           widening.work_us, widening.bound_us)});
  const CudaCoreShare fold = fold_share(t);
  summary.add_row(
      {"folding the indexer's heads (CUDA cores)",
       fmt::format("{:.1f} us if alone; {:.1f} us in kernels it bounds", fold.work_us, fold.bound_us)});
  summary.add_row({"GEMMs waiting on their load pipelines",
                   fmt::format("{:.1f} us in kernels it bounds (narrow tiles: stages refilled once per "
                               "memory latency)",
                               time_bound_by(t, Bound::kLatency))});
  summary.add_row({"uncertainty", step_error_band(t, r.cost.params()).describe()});
  summary.add_row(
      {"FLOPs / HBM bytes", fmt::format("{} / {}", format_count(t.flops), format_bytes(t.hbm_bytes))});
  summary.add_row({"achieved", fmt::format("{:.1f} TFLOP/s, {:.0f} GB/s", tflops(t.flops, t.total_us),
                                           gbps(t.hbm_bytes, t.total_us))});
  summary.add_row({std::string(kKvHeldLabel), kv_memory_phrase(r.memory)});
  summary.add_row({std::string(kResidualStreamsLabel),
                   residual_memory_phrase(r.memory) +
                       (r.memory.activations_fit() ? "" : "; --chunk-tokens chunks it here")});
  summary.add_note("kernel model: " + r.cost.params().label() + "; GPU figures from " + r.gpu.file);
  summary.add_note(
      r.graph.shape.fuse_input_projections
          ? "projections of one input run as one GEMM, weights concatenated along N (as DeepSeek's "
            "V3 serving runs q_a and kv_a); --separate-projections runs each alone"
          : "each projection runs as its own GEMM (--separate-projections)");
  if (r.graph.shape.phase == Phase::kDecode && r.drafts.drafts > 0 && r.model.spec.attention.indexer) {
    summary.add_note(r.graph.shape.engine.draft_queries_share_index_keys ? kDraftIndexKeysShared
                                                                         : kDraftIndexKeysApart);
  }
  if (r.model.spec.attention.candidate_pool) {
    summary.add_note(r.graph.shape.engine.reindex_scores_pool_only ? kReindexScoresPool
                                                                   : kReindexScoresEveryPosition);
  }
  if (r.model.spec.moe && bits_of(r.model.spec.weights.routed_experts.values) <= 8)
    summary.add_note(r.graph.shape.engine.experts_bf16_math ? kExpertsBf16Math : kExpertsFp8Math);
  summary.add_note(kErrorBandMethod);
  summary.add_note(memory_note(r.memory));
  summary.add_note(overlap_note(r.graph));
  if (r.graph.shape.is_mixed()) summary.add_note(kMixedStepAssumption);
  if (r.graph.shape.beside_prompts) summary.add_note(kBesidePromptsAssumption);
  if (r.graph.shape.attention_tp > 1) summary.add_note(kTensorParallelAssumption);
  if (r.graph.shape.experts_split_by_columns) summary.add_note(kExpertsByColumnsAssumption);
  if (scatters_tokens_to_experts(r.graph.shape)) summary.add_note(kScatteredRanksAssumption);
  if (r.model.spec.mhc) summary.add_note(mhc_projection_assumption(r.model.spec));
  if (r.model.spec.attention.indexer) {
    if (const std::string how = fold_note(r.cost.params()); !how.empty()) summary.add_note(how);
  }
  if (r.graph.shape.phase == Phase::kDecode && r.graph.shape.include_draft && r.model.spec.draft)
    summary.add_note(kDraftHeadAssumption);
  if (!r.model.spec.moe) {
    summary.add_note(r.model.spec.name + ": " + std::string(kDenseModelStep));
  } else if (r.graph.shape.ep > 1) {
    summary.add_note(routing_note(r.graph.shape));
  }

  Table layers("Per layer",
               {"layers", "mode", "tokens", "kernels", "time each (us)", "time all (us)", "TFLOP/s", "GB/s"});
  for (const LayerGroup& g : group_layers(t)) {
    const LayerTiming& l = t.layers[g.first];
    layers.add_row({format_ranges(g.layers), l.mode, format_fixed(l.tokens, 0), std::to_string(l.kernels_run),
                    format_fixed(l.critical_us, 1), format_fixed(g.time_us, 1),
                    format_fixed(tflops(l.flops, l.critical_us), 1),
                    format_fixed(gbps(l.hbm_bytes, l.critical_us), 0)});
  }

  std::vector<Table> out{summary, layers};
  for (const LayerGroup& g : group_layers(t)) {
    const LayerKernels& lk = r.graph.layers[g.first];
    const LayerTiming& l = t.layers[g.first];
    Table kernels(fmt::format("Kernels of layer {} ({}){}", format_ranges(g.layers), l.mode,
                              r.graph.micro_batches > 1
                                  ? fmt::format(", one of {} micro-batches{}", r.graph.micro_batches,
                                                r.graph.second_layers.empty() ? "" : " (the larger)")
                                  : std::string()),
                  {"kernel", "class", "math", "tile", "tiles", "waves", "time (us)", "FLOPs", "bytes",
                   "TFLOP/s", "GB/s", "bound"});
    for (std::size_t i = 0; i < lk.kernels().size(); ++i) {
      const Kernel& k = lk.kernels()[i];
      const KernelTiming& kt = l.kernels[i];
      const double bytes = k.link_bytes > 0 ? k.link_bytes : k.hbm_bytes;
      kernels.add_row({k.name, std::string(class_key(k.kernel_class)),
                       std::string(math_name(k.math)) + (kt.math_fallback ? "*" : ""),
                       kt.tile_m > 0 ? fmt::format("{}x{}", kt.tile_m, kt.tile_n) : "-",
                       std::to_string(kt.tiles), std::to_string(kt.waves), format_fixed(kt.time_us, 2),
                       format_count(k.flops), format_bytes(bytes),
                       format_fixed(tflops(k.flops, kt.time_us), 1), format_fixed(gbps(bytes, kt.time_us), 0),
                       std::string(bound_name(kt.bound))});
    }
    if (std::any_of(l.kernels.begin(), l.kernels.end(),
                    [](const KernelTiming& kt) { return kt.math_fallback; })) {
      kernels.add_note("fp4*: no FP4 tensor cores on this GPU; FP4 operands run at the FP8 rate (assumed)");
    }
    out.push_back(kernels);
  }
  return out;
}

nlohmann::json step_json(const StepReport& r) {
  const StepTiming& t = r.timing;
  nlohmann::json layers = nlohmann::json::array();
  for (std::size_t i = 0; i < t.layers.size(); ++i) {
    const LayerTiming& l = t.layers[i];
    const LayerKernels& lk = r.graph.layers[i];
    nlohmann::json kernels = nlohmann::json::array();
    for (std::size_t j = 0; j < lk.kernels().size(); ++j) {
      kernels.push_back(kernel_json(lk.kernels()[j], l.kernels[j], l.kernel_start_us[j]));
    }
    layers.push_back({{"layer", l.layer},
                      {"mode", l.mode},
                      {"tokens", l.tokens},
                      {"start_us", l.start_us},
                      {"time_us", l.critical_us},
                      {"host_copy_us", l.host_copy_us},
                      {"flops", l.flops},
                      {"hbm_bytes", l.hbm_bytes},
                      {"kernels", kernels}});
    if (const LayerKernels* second = second_micro_batch_layer(r.graph, i); second != nullptr) {
      nlohmann::json second_json = nlohmann::json::array();
      for (std::size_t j = 0; j < second->kernels().size(); ++j)
        second_json.push_back(
            kernel_json(second->kernels()[j], l.second_kernels[j], l.second_kernel_start_us[j]));
      layers.back()["second_micro_batch_kernels"] = second_json;
    }
  }
  nlohmann::json modes = nlohmann::json::array();
  for (const ModeTime& m : time_by_mode(t))
    modes.push_back({{"mode", m.mode}, {"layers", m.layers}, {"time_us", m.time_us}});
  const StepShape& s = r.graph.shape;
  const CudaCoreShare widening = widening_share(t);
  const CudaCoreShare fold = fold_share(t);
  return {{"model", r.model.spec.name},
          {"gpu", r.gpu.name},
          {"phase", phase_name(s.phase)},
          {"batch", s.batch},
          {"context", s.context},
          {"new_tokens",  // prefill: tokens each prompt computes (the rest is its cached prefix); decode: 0
           s.phase != Phase::kPrefill ? 0
           : s.new_tokens > 0         ? s.new_tokens
                                      : s.context},
          {"continuing", s.continuing},
          {"prompt_chunks",
           {{"prompts", s.mixed_prefill.batch},
            {"new_tokens", s.mixed_prefill.new_tokens},
            {"context", s.mixed_prefill.context},
            {"continuing", s.mixed_prefill.continuing}}},
          {"ep", s.ep},
          {"attention_tp", s.attention_tp},
          {"routed_experts_split", s.experts_split_by_columns ? "columns" : "experts"},
          {"redundant_experts", s.redundant_experts},
          {"ep_load_imbalance", s.ep_load_imbalance},
          {"expert_token_share", s.expert_token_share},
          {"beside_prompts", s.beside_prompts},
          {"routed_by_chance", s.routed_by_chance},
          {"drafts_verified", s.phase == Phase::kDecode ? r.drafts.drafts : 0},
          {"drafts_chosen", s.phase == Phase::kDecode && r.drafts_from == StepReport::DraftsFrom::kChosen},
          {"tokens_per_sequence", s.phase == Phase::kDecode ? r.drafts.tokens_per_sequence : 1.0},
          {"input_projections", s.fuse_input_projections ? "fused" : "separate"},
          {"draft_index_keys", s.engine.draft_queries_share_index_keys ? "shared" : "per_query"},
          {"reindex_scoring", s.engine.reindex_scores_pool_only ? "pool" : "every_position"},
          {"routed_expert_math", s.engine.experts_bf16_math ? "bf16" : "fp8"},
          {"total_time_us", t.total_us},
          {"compute_us", t.compute_us},
          {"communication_us", t.communication_us},
          {"host_copy_us", t.host_copy_us},
          {"flops", t.flops},
          {"hbm_bytes", t.hbm_bytes},
          {"kernel_count", t.kernel_count},
          {"micro_batches", r.graph.micro_batches},
          {"busier_track_bound_us", overlap_bounds(t).busier_track_us},
          {"widening_us", widening.work_us},
          {"widening_bound_us", widening.bound_us},
          {"fold_us", fold.work_us},
          {"fold_bound_us", fold.bound_us},
          {"latency_bound_us", time_bound_by(t, Bound::kLatency)},
          {"error_band", error_band_json(step_error_band(t, r.cost.params()))},
          {"kv_memory", kv_memory_json(r.memory)},
          {"time_by_mode", modes},
          {"layers", layers},
          {"provenance",
           {{"kernel_model", r.cost.params().label()},
            {"gpu", r.gpu.file},
            {"efficiencies", r.cost.params().source}}}};
}

nlohmann::json step_trace(const StepReport& r) {
  nlohmann::json events = nlohmann::json::array();
  const char* tracks[] = {"compute stream", "EP communication", "host copy engine"};
  for (int tid = 0; tid < 3; ++tid) {
    events.push_back(
        {{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", tid}, {"args", {{"name", tracks[tid]}}}});
  }
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", title(r)}}}});
  const bool split = r.graph.micro_batches > 1;
  for (std::size_t i = 0; i < r.timing.layers.size(); ++i) {
    const LayerTiming& l = r.timing.layers[i];
    add_kernel_events(events, l, r.graph.layers[i], l.kernels, l.kernel_start_us, split ? 1 : 0);
    if (const LayerKernels* second = second_micro_batch_layer(r.graph, i); second != nullptr)
      add_kernel_events(events, l, *second, l.second_kernels, l.second_kernel_start_us, 2);
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ns"}};
}

}  // namespace v41sim
