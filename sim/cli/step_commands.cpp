// v41sim step and compare-layers: the kernel model on one forward step.

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "sim/cli/flags.h"
#include "sim/common/catalog.h"
#include "sim/cost/draft_choice.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/cost/step_cost.h"
#include "sim/graph/expert_load.h"
#include "sim/graph/residual_mixing.h"
#include "sim/graph/step_graph.h"
#include "sim/report/layer_comparison.h"
#include "sim/report/step_log_view.h"
#include "sim/report/step_view.h"
#include "sim/validation/step_log.h"
#include "sim/validation/step_log_comparison.h"

namespace v41sim::cli {
namespace {

StepShape step_shape_from(const Flags& f) {
  StepShape s;
  if (f.phase == "prefill") {
    s.phase = Phase::kPrefill;
  } else if (f.phase != "decode") {
    throw InputError({"", 0, "--phase"}, "unknown value '" + f.phase + "' (expected prefill or decode)");
  }
  if (f.mhc != "model" && f.mhc != "fused" && f.mhc != "three-kernel") {
    throw InputError({"", 0, "--mhc"},
                     "unknown value '" + f.mhc + "' (expected model, fused or three-kernel)");
  }
  s.batch = f.batch;
  s.context = f.context;
  s.ep = f.ep;
  // Checked here as well as with the graph: the expert-share flags divide by it first.
  if (f.attention_tp < 1) {
    throw InputError({"", 0, "--attention-tp"},
                     fmt::format("expected at least 1 GPU an attention rank, got {}", f.attention_tp));
  }
  s.attention_tp = f.attention_tp;
  s.experts_split_by_columns = f.experts_by_columns;
  s.engine.mhc_form = f.mhc == "model"   ? MhcForm::kAsModel
                      : f.mhc == "fused" ? MhcForm::kSinglePass
                                         : MhcForm::kThreeKernel;
  s.include_draft = !f.no_draft;
  s.overlap_communication = f.overlap;
  s.fuse_input_projections = !f.separate_projections;
  s.engine.draft_queries_share_index_keys = !f.index_keys_per_query;
  s.engine.reindex_scores_pool_only = !f.reindex_scores_every_position;
  s.engine.experts_bf16_math = f.experts_bf16;
  return s;
}

// A prefill step of chunks: each of the --batch prompts computes its last
// --chunk-tokens ending at --context (the rest is its cached prefix).
void set_prefill_chunks(const Flags& f, StepShape* s) {
  if (f.chunk_context != 0) {
    throw InputError({"", 0, "--chunk-context"}, "in a prefill step each chunk ends at --context");
  }
  if (f.chunk_tokens < 0 || f.chunk_tokens > s->context) {
    throw InputError(
        {"", 0, "--chunk-tokens"},
        fmt::format("expected 1..--context ({}) new tokens per chunk, got {}", s->context, f.chunk_tokens));
  }
  s->new_tokens = f.chunk_tokens;
  s->continuing = f.chunks_continuing;
}

// The chunks a step computes (step only; compare-layers has no such flags):
// a prefill step's own, or the prompt chunks a decode step carries.
void add_prompt_chunks(const Flags& f, StepShape* s) {
  if (f.prompt_chunks == 0 && f.chunk_tokens == 0 && f.chunk_context == 0 && f.chunks_continuing == 0) return;
  if (s->phase == Phase::kPrefill && f.prompt_chunks == 0) {
    set_prefill_chunks(f, s);
    return;
  }
  if (f.prompt_chunks <= 0) {
    throw InputError({"", 0, "--prompt-chunks"},
                     fmt::format("expected a positive number of prompts, got {}", f.prompt_chunks));
  }
  if (s->phase != Phase::kDecode) {
    throw InputError({"", 0, "--prompt-chunks"}, "prompt chunks ride on decode steps: give --phase decode");
  }
  if (f.chunk_tokens <= 0) {
    throw InputError(
        {"", 0, "--chunk-tokens"},
        fmt::format("expected a positive number of new tokens per chunk, got {}", f.chunk_tokens));
  }
  const int64_t context = f.chunk_context > 0 ? f.chunk_context : f.chunk_tokens;
  if (f.chunk_tokens > context) {
    throw InputError({"", 0, "--chunk-tokens"},
                     fmt::format("expected at most --chunk-context ({}) new tokens per chunk, got {}",
                                 context, f.chunk_tokens));
  }
  s->mixed_prefill = {f.prompt_chunks, f.chunk_tokens, context, f.chunks_continuing};
}

// CUDA graphs are how decode-only steps are launched in practice; prefill, a
// decode step carrying prompt chunks and one beside another rank's prompt
// step launch kernels.
bool uses_cuda_graph(const Flags& f, const StepShape& s) { return !f.no_cuda_graph && s.decode_only(); }

}  // namespace

// EPLB's replicas and the routing's skew (step alone: compare-layers sets
// models of different expert counts side by side). No skew given: every
// expert as popular; each step's routing still falls by chance unless
// --balanced-routing, as DeepSeek's published profiles simulate it.
void set_expert_placement(const Flags& f, const ModelAnalysis& m, StepShape* s) {
  s->redundant_experts = f.redundant_experts;
  s->routed_by_chance = !f.balanced_routing;
  if (!f.routing_skew) return;
  if (!(*f.routing_skew >= 0) || !std::isfinite(*f.routing_skew)) {
    throw InputError({"", 0, "--routing-skew"},
                     fmt::format("expected a finite Zipf exponent >= 0, got {}", *f.routing_skew));
  }
  // Checked before placing them (the step graph checks again): the placement
  // takes a pass per replica, so a count past the experts is refused first.
  require_ep_divides_expert_slots(m.spec, s->ep, s->redundant_experts, {"", 0, "--ep"},
                                  {"", 0, "--redundant-experts"});
  s->ep_load_imbalance = ep_load_imbalance(m.spec, s->ep, *f.routing_skew, s->redundant_experts);
}

// The experts' share of the rows where this rank's `part` of a step stands
// against the EP group's `whole` (StepShape::expert_token_share): `part` must
// be 1 to `whole`, the flag `whole_flag` names.
void set_expert_share(int64_t part, int64_t whole, const char* field, const char* whole_flag,
                      const char* unit, StepShape* s) {
  if (part < 1 || part > whole) {
    throw InputError({"", 0, field},
                     fmt::format("expected 1 to {} ({}) {}, got {}", whole_flag, whole, unit, part));
  }
  s->expert_token_share = static_cast<double>(part) / static_cast<double>(whole);
}

// A prefill step run by some of the EP group's ranks, the others idle: the
// routed experts take that share of the rows.
void set_prompt_ranks(const Flags& f, StepShape* s) {
  if (!f.prompt_ranks) return;
  if (s->phase != Phase::kPrefill) {
    throw InputError({"", 0, "--prompt-ranks"},
                     "only a prefill step's ranks may differ: give --phase prefill");
  }
  // A tensor-parallel rank is its EP group's one rank (tensor_parallel.h).
  set_expert_share(*f.prompt_ranks, s->ep / s->attention_tp, "--prompt-ranks",
                   s->attention_tp > 1 ? "--ep / --attention-tp" : "--ep", "ranks", s);
}

// `flag` asks for something only a plain decode step has (`what` says it).
void require_plain_decode(const StepShape& s, const char* flag, const char* what) {
  if (s.phase == Phase::kDecode && !s.is_mixed()) return;
  throw InputError({"", 0, flag}, fmt::format("{}: give --phase decode without --prompt-chunks", what));
}

// A decode step on the busiest rank of its group, the others decoding fewer
// sequences: the routed experts take the group's mean (as a serving run
// times it, there to the nearest 1 / EP).
void set_group_batch(const Flags& f, StepShape* s) {
  if (!f.group_batch) return;
  require_plain_decode(*s, "--group-batch", "only a plain decode step's batch may differ from the group's");
  if (s->ep == s->attention_tp && *f.group_batch != s->batch) {
    throw InputError(
        {"", 0, "--group-batch"},
        fmt::format("with --ep {} this rank is its group: its mean is --batch ({}), got {}",
                    s->attention_tp > 1 ? "equal to --attention-tp" : "1", s->batch, *f.group_batch));
  }
  set_expert_share(*f.group_batch, s->batch, "--group-batch", "--batch", "sequences", s);
}

// A decode step run beside another rank's prompt step (StepShape::beside_prompts).
void set_beside_prompts(const Flags& f, StepShape* s) {
  if (!f.beside_prompts) return;
  require_plain_decode(*s, "--beside-prompts", "only a plain decode step runs beside prompts");
  s->beside_prompts = true;
}

// A decode step verifies the drafts --drafts gives, else those a serving run
// would (DraftChoice); a prefill step has none to verify.
DraftChoice set_drafts(const Flags& f, const ModelAnalysis& m, const KernelCostModel& cost, StepShape* s) {
  if (s->phase != Phase::kDecode) {
    if (f.drafts) throw InputError({"", 0, "--drafts"}, "a decode step verifies drafts, not a prefill step");
    return {};
  }
  if (!f.drafts) {
    const SpeculativeStep served = as_served(m, *s, cost);
    *s = served.shape;
    return served.choice;
  }
  const int64_t most = m.spec.draft && !f.no_draft ? m.spec.draft->block_size : 0;
  if (*f.drafts < 0 || *f.drafts > most) {
    const std::string range = most > 0     ? fmt::format("0 to {} drafts (the draft's block size)", most)
                              : f.no_draft ? "0 drafts (--no-draft)"
                                           : "0 drafts (the model has no draft)";
    throw InputError({"", 0, "--drafts"}, fmt::format("expected {}, got {}", range, *f.drafts));
  }
  *s = verifying(*s, *f.drafts);
  return draft_count(m.spec, *f.drafts);
}

void run_step(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const ModelAnalysis m = load_model_named(catalog, f.model);
  StepShape shape = step_shape_from(f);
  require_mhc_for_form(m.spec, shape.engine.mhc_form, {"", 0, "--mhc"});
  set_expert_placement(f, m, &shape);
  add_prompt_chunks(f, &shape);
  set_prompt_ranks(f, &shape);
  set_group_batch(f, &shape);
  set_beside_prompts(f, &shape);
  const GpuCostModel g(catalog.data_dir(), catalog.resolve_gpu(f.hw), uses_cuda_graph(f, shape));
  shape.ep_per_node = g.gpu().nvlink_domain();
  const DraftChoice drafts = set_drafts(f, m, g.cost(), &shape);
  const StepGraph graph = build_step_graph(m, shape);
  const StepTiming timing = time_step(graph, g.cost());
  GpuProfile gpu = g.gpu();
  gpu.file = path_in_data_dir(gpu.file, catalog.data_dir());  // outputs read the same wherever the data sits
  const StepReport report{m,
                          gpu,
                          g.cost(),
                          graph,
                          timing,
                          drafts,
                          f.drafts     ? StepReport::DraftsFrom::kGiven
                          : f.no_draft ? StepReport::DraftsFrom::kSpeculationOff
                                       : StepReport::DraftsFrom::kChosen,
                          step_memory(m, gpu, graph)};
  if (!f.trace.empty()) {
    std::ofstream trace(f.trace);
    if (!trace) throw InputError({f.trace, 0, "--trace"}, "cannot write the trace file");
    trace << step_trace(report).dump() << "\n";
  }
  if (f.json) {
    out << step_json(report).dump(2) << "\n";
  } else {
    print_tables(out, step_tables(report));
    if (!f.trace.empty()) out << "trace written to " << f.trace << " (open in ui.perfetto.dev)\n";
  }
}

// The deployment every logged step runs on, in words.
std::string step_log_settings(const StepShape& s, const Flags& f) {
  return fmt::format(
      "EP {}{}, {}, {}; decode steps {}, prefill and mixed steps launched; {}{}{}{}{}{}", s.ep,
      s.redundant_experts > 0 ? fmt::format(" with {} redundant experts", s.redundant_experts) : "",
      f.routing_skew ? fmt::format("experts' popularity Zipf {:g}", *f.routing_skew)
                     : "every expert as popular",
      s.routed_by_chance ? "each step's routing by chance" : "every rank its exact share of the routing",
      f.no_cuda_graph ? "launched" : "replayed from a CUDA graph",
      s.overlap_communication ? "two micro-batches" : "one batch (EP transfers after compute)",
      s.fuse_input_projections ? "" : ", each projection its own GEMM",
      s.engine.draft_queries_share_index_keys ? "" : ", index keys read once a query",
      s.engine.reindex_scores_pool_only ? "" : ", Reindex layers scoring every position",
      s.engine.experts_bf16_math ? ", routed experts in BF16 math (W4A16)" : "",
      f.mhc == "model" ? "" : ", mHC " + f.mhc);
}

void run_step_log(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const StepLog log = load_step_log(f.step_log);
  const ModelAnalysis m = load_model_named(catalog, f.model);
  StepShape base = step_shape_from(f);
  require_mhc_for_form(m.spec, base.engine.mhc_form, {"", 0, "--mhc"});
  set_expert_placement(f, m, &base);
  const std::string gpu_file = catalog.resolve_gpu(f.hw);
  const GpuCostModel launched(catalog.data_dir(), gpu_file, false);
  const GpuCostModel replayed(catalog.data_dir(), gpu_file, !f.no_cuda_graph);
  base.ep_per_node = launched.gpu().nvlink_domain();
  const StepLogComparison comparison = compare_step_log(log, m, base, launched.cost(), replayed.cost());
  GpuProfile gpu = launched.gpu();
  gpu.file = path_in_data_dir(gpu.file, catalog.data_dir());
  const StepLogReport report{log, comparison, gpu, launched.cost().params().label(),
                             step_log_settings(base, f)};
  if (f.json) {
    out << step_log_json(report).dump(2) << "\n";
  } else {
    print_tables(out, step_log_tables(report));
  }
}

void run_compare_layers(const Catalog& catalog, const Flags& f, std::ostream& out) {
  StepShape shape = step_shape_from(f);
  const GpuCostModel g(catalog.data_dir(), catalog.resolve_gpu(f.hw), uses_cuda_graph(f, shape));
  shape.ep_per_node = g.gpu().nvlink_domain();
  std::vector<ModelAnalysis> models;
  std::stringstream names(f.models);
  for (std::string name; std::getline(names, name, ',');) models.push_back(load_model_named(catalog, name));
  const LayerComparison comparison = compare_layers(models, g.gpu(), g.cost(), shape);
  if (f.json) {
    out << comparison_json(comparison, g.gpu(), g.cost()).dump(2) << "\n";
  } else {
    print_tables(out, comparison_tables(comparison, g.gpu(), g.cost()));
  }
}

}  // namespace v41sim::cli
