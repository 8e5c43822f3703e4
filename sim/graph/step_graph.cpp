#include "sim/graph/step_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "sim/common/input_error.h"
#include "sim/graph/attention_block.h"
#include "sim/graph/ffn_block.h"
#include "sim/graph/kernel_factory.h"
#include "sim/graph/tensor_parallel.h"

namespace v41sim {
namespace {

bool is_engram_layer(const ModelSpec& m, int64_t layer) {
  return m.engram &&
         std::find(m.engram->layers.begin(), m.engram->layers.end(), layer) != m.engram->layers.end();
}

// Prompts computing their last `fresh` tokens (a cached prefix is only
// read); `continuing` of them have more chunks to come. Every prompt writes
// the layer's global KV. Under CED a decoder layer runs only on the last few
// rows of a prompt, in its last chunk (the rows' count is taken from this
// chunk, short where the last chunk is shorter than the rows replayed); a
// layer no prompt of the group runs adds no group.
void add_prompt_group(LayerContext& c, double sequences, double continuing, double fresh, double context,
                      std::string name_suffix) {
  const ModelSpec& m = c.model.spec;
  c.kv_tokens += sequences * fresh;
  const bool decoder_layer = m.ced && c.plan.layer >= m.ced->encoder_layers;
  const double running = decoder_layer ? sequences - continuing : sequences;
  if (running <= 0) return;
  const double rows =
      decoder_layer ? std::min(fresh, static_cast<double>(m.ced->decoder_keep_tokens)) : fresh;
  c.groups.push_back({Phase::kPrefill, running, running * rows, context, std::move(name_suffix)});
}

// The first layer of a tensor-parallel step opens with the embedding's all-reduce.
bool carries_embedding_all_reduce(const StepShape& s, const LayerPlanEntry& plan) {
  return s.attention_tp > 1 && plan.layer == 0;
}

LayerKernels layer_of(int64_t layer, std::string mode, double tokens, std::vector<Kernel> kernels) {
  return {layer, std::move(mode), tokens, std::make_shared<const std::vector<Kernel>>(std::move(kernels))};
}

}  // namespace

LayerKernels backbone_layer(const ModelAnalysis& model, const StepShape& s, const LayerPlanEntry& plan) {
  const ModelSpec& m = model.spec;
  const double batch = static_cast<double>(s.batch);
  const double context = static_cast<double>(s.context);
  LayerContext c{model, s, plan};
  if (s.phase == Phase::kDecode) {
    const double tokens = batch * static_cast<double>(s.decode_tokens_per_sequence);
    c.groups.push_back({Phase::kDecode, batch, tokens, context, ""});
    c.kv_tokens = tokens;
    if (s.is_mixed()) {
      const StepShape::PrefillChunks& p = s.mixed_prefill;
      add_prompt_group(c, static_cast<double>(p.batch), static_cast<double>(p.continuing),
                       static_cast<double>(p.new_tokens), static_cast<double>(p.context), "_prompt_chunks");
    }
  } else {
    const double fresh = s.new_tokens > 0 ? std::min(static_cast<double>(s.new_tokens), context) : context;
    add_prompt_group(c, batch, static_cast<double>(s.continuing), fresh, context, "");
  }
  for (const SequenceGroup& g : c.groups) c.tokens += g.tokens;
  c.moe = m.is_moe_layer(plan.layer);
  if (c.moe) {
    c.routed_experts = m.moe->routed_experts;
    c.redundant_experts = s.redundant_experts;
    c.top_k = m.moe->top_k;
    c.shared_experts = m.moe->shared_experts;
    c.ffn_intermediate = m.moe->expert_intermediate;
  } else {
    c.ffn_intermediate = m.dense_mlp.intermediate;
  }
  std::vector<Kernel> kernels;
  KernelFactory f(kernels);
  // Split by vocabulary over a tensor-parallel rank's GPUs, the embedding's
  // rows for the step's tokens are summed before the first layer reads them.
  if (carries_embedding_all_reduce(s, plan))
    f.push(make_all_reduce("embed_tp_all_reduce", c.tokens, m.hidden_size, s.attention_tp));
  add_attention_block(c, f);
  if (c.tokens > 0) {  // else a layer that only writes its global KV (add_attention_block)
    if (is_engram_layer(m, plan.layer)) add_engram_lookup(c, f);
    add_ffn_block(c, f);
  }
  return layer_of(plan.layer, plan.mode, c.tokens, std::move(kernels));
}

namespace {

// The final norm and the projection onto the vocabulary of `tokens` rows,
// numbered `layer`: the backbone's head, or the draft's (which reads the
// same weights: kDraftHeadAssumption), its kernels named with `prefix`.
LayerKernels output_head(const ModelAnalysis& model, const StepShape& s, double tokens, int64_t layer,
                         const std::string& mode, const std::string& prefix) {
  const ModelSpec& m = model.spec;
  const double h = static_cast<double>(m.hidden_size);
  const double vocab = static_cast<double>(m.vocab_size) / static_cast<double>(s.attention_tp);  // this GPU's
  std::vector<Kernel> kernels;
  KernelFactory f(kernels);
  f.elementwise(prefix + "final_norm", tokens, h, tokens * h * 2.0 * kBf16ActivationBytes);
  f.gemm(prefix + "lm_head", tokens, vocab, h, m.weights.embedding, MathType::kBf16);
  if (s.attention_tp > 1)
    f.push(make_logits_gather(prefix + "logits_tp_gather", tokens, m.vocab_size, s.attention_tp));
  return layer_of(layer, mode, tokens, std::move(kernels));
}

// A DSpark stage (draft_stage_shape: the shape its parameter count uses too),
// run on `block_size` positions per sequence. The stages run alike; this is
// the first, numbered after the head.
LayerKernels draft_stage(const ModelAnalysis& model, const StepShape& s) {
  const DraftStageShape shape = draft_stage_shape(model.spec);
  LayerContext c{model, s, shape.plan};
  c.tokens = c.kv_tokens = static_cast<double>(s.batch * model.spec.draft->block_size);
  c.groups.push_back(
      {Phase::kDecode, static_cast<double>(s.batch), c.tokens, static_cast<double>(s.context), ""});
  c.moe = shape.routed_experts > 0;
  c.routed_experts = shape.routed_experts;
  c.top_k = shape.top_k;
  c.ffn_intermediate = shape.ffn_intermediate;
  std::vector<Kernel> kernels;
  KernelFactory f(kernels);
  add_attention_block(c, f);
  add_ffn_block(c, f);
  return layer_of(shape.plan.layer, shape.plan.mode, c.tokens, std::move(kernels));
}

}  // namespace

void validate_step_shape(const ModelAnalysis& model, const StepShape& s) {
  if (s.batch <= 0 || s.batch > kMaxSequencesPerStep) {
    throw InputError({"", 0, "--batch"},
                     fmt::format("expected 1..{} sequences, got {}", kMaxSequencesPerStep, s.batch));
  }
  if (s.context <= 0) {
    throw InputError({"", 0, "--context"}, fmt::format("expected a positive token count, got {}", s.context));
  }
  if (s.context > model.spec.max_context) {
    throw InputError({"", 0, "--context"}, fmt::format("{} tokens exceed {}'s max_context of {}", s.context,
                                                       model.spec.name, model.spec.max_context));
  }
  if (s.new_tokens < 0 || s.new_tokens > s.context) {
    throw InputError({"", 0, "new_tokens"}, fmt::format("expected 0..{} tokens computed per sequence, got {}",
                                                        s.context, s.new_tokens));
  }
  if (s.continuing < 0 || s.continuing > (s.phase == Phase::kPrefill ? s.batch : 0)) {
    throw InputError({"", 0, "--chunks-continuing"},
                     fmt::format("expected 0..{} prompts whose chunk does not end them, got {}",
                                 s.phase == Phase::kPrefill ? s.batch : 0, s.continuing));
  }
  if (!(s.ep_load_imbalance >= 1.0)) {
    throw InputError({"", 0, "ep_load_imbalance"},
                     fmt::format("expected a factor >= 1, got {}", s.ep_load_imbalance));
  }
  if (s.decode_tokens_per_sequence < 1) {
    throw InputError({"", 0, "decode_tokens_per_sequence"},
                     fmt::format("expected at least 1, got {}", s.decode_tokens_per_sequence));
  }
  if (s.mixed_prefill.batch > kMaxSequencesPerStep) {
    throw InputError({"", 0, "--prompt-chunks"}, fmt::format("expected at most {} prompts, got {}",
                                                             kMaxSequencesPerStep, s.mixed_prefill.batch));
  }
  if (s.mixed_prefill.batch < 0 || (s.mixed_prefill.batch > 0 && s.phase != Phase::kDecode)) {
    throw InputError(
        {"", 0, "mixed_prefill"},
        fmt::format("expected prompt chunks only in a decode step, got {}", s.mixed_prefill.batch));
  }
  if (s.is_mixed()) {
    const StepShape::PrefillChunks& p = s.mixed_prefill;
    if (p.context <= 0 || p.context > model.spec.max_context || p.new_tokens <= 0 ||
        p.new_tokens > p.context) {
      throw InputError(
          {"", 0, "mixed_prefill"},
          fmt::format("expected prompt chunks of 1..context tokens ending within {}'s max_context of "
                      "{}, got {} tokens ending at {}",
                      model.spec.name, model.spec.max_context, p.new_tokens, p.context));
    }
    if (p.continuing < 0 || p.continuing > p.batch) {
      throw InputError({"", 0, "--chunks-continuing"},
                       fmt::format("expected 0..{} prompt chunks that do not end their prompt, got {}",
                                   p.batch, p.continuing));
    }
  }
  require_ep_divides_expert_slots(model.spec, s.ep, s.redundant_experts, {"", 0, "--ep"},
                                  {"", 0, "--redundant-experts"});
  require_attention_tp_fits(model.spec, s.attention_tp, s.ep, s.ep_per_node, {"", 0, "--attention-tp"});
  if (s.experts_split_by_columns)
    require_column_split_fits(model.spec, s.attention_tp, s.ep, s.redundant_experts,
                              {"", 0, "--experts-by-columns"});
}

namespace {

// Splits `batch` prompts, `continuing` of them not ending, into two halves:
// the first gets the larger half and the second as many of the continuing as
// it holds, up to half of them rounded up (so the first never has fewer
// prompts ending, and never fewer layers to run).
void split_prompts(int64_t batch, int64_t continuing, int64_t* first_batch, int64_t* first_continuing,
                   int64_t* second_batch, int64_t* second_continuing) {
  *first_batch = (batch + 1) / 2;
  *second_batch = batch / 2;
  *second_continuing = std::min(*second_batch, continuing - continuing / 2);
  *first_continuing = continuing - *second_continuing;
}

// All that backbone_layer reads of a layer: two layers alike in it run the
// same kernels (most of a model's layers are a few kinds), so a step's graph
// builds each kind once and copies it.
using LayerKind = std::tuple<LayerRole, std::string, int64_t, bool, bool, bool, bool, bool, bool, bool, bool,
                             bool, bool, bool, bool>;
LayerKind kind_of(const ModelSpec& m, const StepShape& s, const LayerPlanEntry& plan) {
  return {plan.role,
          plan.mode,
          plan.ratio,
          plan.has_window,
          plan.kv_source.has_value(),
          plan.topk_source.has_value(),
          plan.owns_kv(),
          plan.owns_index_keys(),
          plan.selects_topk(),
          plan.builds_candidate_pool,
          plan.scores_in_candidate_pool,
          m.ced && plan.layer >= m.ced->encoder_layers,
          m.is_moe_layer(plan.layer),
          is_engram_layer(m, plan.layer),
          carries_embedding_all_reduce(s, plan)};
}

// The step's layers for one micro-batch shape (or the whole step), written
// over `layers`: a list reused from an earlier step keeps its storage (its
// entries and mode strings are assigned in place; each kind's kernels are shared).
void layers_of(const ModelAnalysis& model, const StepShape& s, std::vector<LayerKernels>& layers) {
  std::size_t count = 0;
  const auto put = [&layers, &count](const LayerKernels& layer) -> LayerKernels& {
    if (count < layers.size()) {
      layers[count] = layer;
    } else {
      layers.push_back(layer);
    }
    return layers[count++];
  };
  std::vector<std::pair<LayerKind, LayerKernels>> kinds;  // each kind's first layer, as built
  for (const LayerPlanEntry& plan : model.plan) {
    const LayerKind kind = kind_of(model.spec, s, plan);
    auto built = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == kind; });
    if (built == kinds.end()) {
      kinds.emplace_back(kind, backbone_layer(model, s, plan));
      built = std::prev(kinds.end());
      built->second.kind = static_cast<int64_t>(kinds.size()) - 1;
    }
    if (built->second.kernels().empty()) continue;  // CED: a chunk's idle decoder layers
    put(built->second).layer = plan.layer;
  }
  // Prefill: the last token of each prompt that ends in this step; decode:
  // every verified position (and in a mixed step, the ending prompts' last tokens).
  const int64_t sampled = s.phase == Phase::kDecode
                              ? s.batch * s.decode_tokens_per_sequence +
                                    (s.is_mixed() ? s.mixed_prefill.batch - s.mixed_prefill.continuing : 0)
                              : s.batch - s.continuing;
  const int64_t head = model.spec.num_layers;
  if (sampled > 0) put(output_head(model, s, static_cast<double>(sampled), head, "Head", ""));
  if (s.phase == Phase::kDecode && s.include_draft && model.spec.draft) {
    // The stages run alike: one is built, and the others share its kernels
    // as one more kind (numbered past the backbone's, in either list). Their
    // block of positions then goes through the draft's head, of no kind.
    LayerKernels stage = draft_stage(model, s);
    stage.kind = static_cast<int64_t>(kinds.size());
    const int64_t stages = model.spec.draft->stages;
    for (int64_t i = 0; i < stages; ++i) put(stage).layer = stage.layer + i;
    put(output_head(model, s, stage.tokens, stage.layer + stages, kDraftHeadMode, "draft_"));
  }
  layers.resize(count);
}

bool alike(const StepShape& a, const StepShape& b) {
  return a.batch == b.batch && a.new_tokens == b.new_tokens && a.continuing == b.continuing &&
         a.mixed_prefill.batch == b.mixed_prefill.batch &&
         a.mixed_prefill.new_tokens == b.mixed_prefill.new_tokens &&
         a.mixed_prefill.continuing == b.mixed_prefill.continuing;
}

}  // namespace

// A single prompt splits by its new tokens, each half taken over the whole
// context (an approximation: the first half attends to a shorter span, and
// under CED only the second runs the decoder's rows). A single decode
// sequence does not split.
const LayerKernels* second_micro_batch_layer(const StepGraph& graph, std::size_t i) {
  if (graph.micro_batches < 2) return nullptr;
  if (graph.second_layers.empty()) return &graph.layers[i];
  // The second's layers are some of the first's, in order (by layer id).
  const int64_t id = graph.layers[i].layer;
  const auto it = std::lower_bound(graph.second_layers.begin(), graph.second_layers.end(), id,
                                   [](const LayerKernels& l, int64_t wanted) { return l.layer < wanted; });
  return it != graph.second_layers.end() && it->layer == id ? &*it : nullptr;
}

std::vector<StepShape> micro_batches_of(const StepShape& s) {
  if (!s.overlap_communication) return {s};
  StepShape first = s;
  first.overlap_communication = false;
  StepShape second = first;
  if (s.is_mixed()) {
    // Each group halves: the prompt chunks (or a single chunk's tokens) and
    // the decode sequences (a lone one counts in both halves, overcosting the
    // step slightly).
    const StepShape::PrefillChunks& chunks = s.mixed_prefill;
    if (chunks.batch >= 2) {
      split_prompts(chunks.batch, chunks.continuing, &first.mixed_prefill.batch,
                    &first.mixed_prefill.continuing, &second.mixed_prefill.batch,
                    &second.mixed_prefill.continuing);
    } else if (chunks.new_tokens >= 2) {
      first.mixed_prefill.new_tokens = (chunks.new_tokens + 1) / 2;
      second.mixed_prefill.new_tokens = chunks.new_tokens / 2;
    } else {
      return {s};
    }
    first.batch = (s.batch + 1) / 2;
    second.batch = std::max<int64_t>(1, s.batch / 2);
    return {first, second};
  }
  if (s.batch >= 2) {
    split_prompts(s.batch, s.continuing, &first.batch, &first.continuing, &second.batch, &second.continuing);
  } else if (s.phase == Phase::kPrefill) {
    const int64_t fresh = s.new_tokens > 0 ? s.new_tokens : s.context;
    if (fresh < 2) return {s};
    first.new_tokens = (fresh + 1) / 2;
    second.new_tokens = fresh / 2;
  } else {
    return {s};
  }
  return {first, second};
}

StepGraph build_step_graph(const ModelAnalysis& model, const StepShape& whole) {
  StepGraph graph;
  build_step_graph(model, whole, graph);
  return graph;
}

void build_step_graph(const ModelAnalysis& model, const StepShape& whole, StepGraph& graph) {
  validate_step_shape(model, whole);
  const std::vector<StepShape> parts = micro_batches_of(whole);
  graph.shape = whole;
  graph.micro_batches = static_cast<int64_t>(parts.size());
  layers_of(model, parts.front(), graph.layers);
  if (parts.size() == 2 && !alike(parts[0], parts[1])) {
    layers_of(model, parts[1], graph.second_layers);
  } else {
    graph.second_layers.clear();
  }
}

}  // namespace v41sim
