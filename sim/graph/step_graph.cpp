#include "sim/graph/step_graph.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/common/input_error.h"
#include "sim/graph/attention_block.h"
#include "sim/graph/ffn_block.h"
#include "sim/graph/kernel_factory.h"

namespace v41sim {
namespace {

bool is_engram_layer(const ModelSpec& m, int64_t layer) {
  return m.engram &&
         std::find(m.engram->layers.begin(), m.engram->layers.end(), layer) != m.engram->layers.end();
}

// A group of prompts computing their last `fresh` tokens (a cached prefix is
// only read). Under CED the decoder layers run on the last few tokens only.
SequenceGroup prompt_group(const ModelSpec& m, const LayerPlanEntry& plan, double sequences, double fresh,
                           double context, double* kv_tokens) {
  const bool decoder_layer = m.ced && plan.layer >= m.ced->encoder_layers;
  const double run = decoder_layer ? std::min(fresh, static_cast<double>(m.ced->decoder_keep_tokens)) : fresh;
  *kv_tokens += sequences * fresh;
  return {Phase::kPrefill, sequences, sequences * run, context, ""};
}

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
      c.groups.push_back(prompt_group(m, plan, static_cast<double>(p.batch),
                                      static_cast<double>(p.new_tokens), static_cast<double>(p.context),
                                      &c.kv_tokens));
      c.groups.back().name_suffix = "_prompt_chunks";
    }
  } else {
    const double fresh = s.new_tokens > 0 ? std::min(static_cast<double>(s.new_tokens), context) : context;
    c.groups.push_back(prompt_group(m, plan, batch, fresh, context, &c.kv_tokens));
  }
  for (const SequenceGroup& g : c.groups) c.tokens += g.tokens;
  c.moe = m.is_moe_layer(plan.layer);
  if (c.moe) {
    c.routed_experts = m.moe->routed_experts;
    c.top_k = m.moe->top_k;
    c.shared_experts = m.moe->shared_experts;
    c.ffn_intermediate = m.moe->expert_intermediate;
  } else {
    c.ffn_intermediate = m.dense_mlp.intermediate;
  }
  LayerKernels out{plan.layer, plan.mode, c.tokens, {}};
  KernelFactory f(out.kernels);
  add_attention_block(c, f);
  if (is_engram_layer(m, plan.layer)) add_engram_lookup(c, f);
  add_ffn_block(c, f);
  return out;
}

LayerKernels output_head(const ModelAnalysis& model, double tokens) {
  const ModelSpec& m = model.spec;
  const double h = static_cast<double>(m.hidden_size);
  LayerKernels out{m.num_layers, "Head", tokens, {}};
  KernelFactory f(out.kernels);
  f.elementwise("final_norm", tokens, h, tokens * h * 2.0 * kBf16ActivationBytes);
  f.gemm("lm_head", tokens, static_cast<double>(m.vocab_size), h, m.weights.embedding, MathType::kBf16);
  return out;
}

// A DSpark stage: a window-only attention block and its own MoE, run on
// `block_size` positions per sequence. Its widths are not published; the
// backbone's are assumed (see the model file's draft block).
LayerKernels draft_stage(const ModelAnalysis& model, const StepShape& s, int64_t stage) {
  const ModelSpec& m = model.spec;
  const DraftSpec& d = *m.draft;
  static const LayerPlanEntry kDraftPlan = [] {
    LayerPlanEntry e;
    e.role = LayerRole::kWindowOnly;
    e.mode = "Draft";
    e.has_window = true;
    return e;
  }();
  LayerPlanEntry plan = kDraftPlan;
  plan.layer = m.num_layers + 1 + stage;
  plan.has_window = m.attention.sliding_window > 0;
  LayerContext c{model, s, plan};
  c.tokens = c.kv_tokens = static_cast<double>(s.batch * d.block_size);
  c.groups.push_back(
      {Phase::kDecode, static_cast<double>(s.batch), c.tokens, static_cast<double>(s.context), ""});
  c.moe = d.routed_experts > 0;
  c.routed_experts = d.routed_experts;
  c.top_k = d.top_k;
  c.ffn_intermediate = m.moe ? m.moe->expert_intermediate : m.dense_mlp.intermediate;
  LayerKernels out{plan.layer, "Draft", c.tokens, {}};
  KernelFactory f(out.kernels);
  add_attention_block(c, f);
  add_ffn_block(c, f);
  return out;
}

}  // namespace

void validate_step_shape(const ModelAnalysis& model, const StepShape& s) {
  if (s.batch <= 0)
    throw InputError({"", 0, "--batch"}, fmt::format("expected a positive batch, got {}", s.batch));
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
  if (!(s.ep_load_imbalance >= 1.0)) {
    throw InputError({"", 0, "ep_load_imbalance"},
                     fmt::format("expected a factor >= 1, got {}", s.ep_load_imbalance));
  }
  if (s.decode_tokens_per_sequence < 1) {
    throw InputError({"", 0, "decode_tokens_per_sequence"},
                     fmt::format("expected at least 1, got {}", s.decode_tokens_per_sequence));
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
  }
  if (s.ep <= 0) throw InputError({"", 0, "--ep"}, fmt::format("expected a positive EP size, got {}", s.ep));
  const int64_t experts = model.spec.moe ? model.spec.moe->routed_experts : 1;
  if (experts % s.ep != 0) {
    throw InputError({"", 0, "--ep"}, fmt::format("EP size {} does not divide the {} routed experts of {}",
                                                  s.ep, experts, model.spec.name));
  }
}

// Half the sequences (the larger half), or, for a single prompt, half its new
// tokens, taken over the whole context (an approximation: the first half
// attends to a shorter span). A single decode sequence does not split.
StepShape micro_batch_of(const StepShape& s, int64_t* micro_batches) {
  *micro_batches = 1;
  if (!s.overlap_communication) return s;
  StepShape half = s;
  half.overlap_communication = false;
  if (s.is_mixed()) {
    // The larger half of each group: of the decode sequences (a lone one
    // counts in both halves, overcosting the step slightly) and of the prompt
    // chunks, or of a single chunk's tokens.
    StepShape::PrefillChunks& chunks = half.mixed_prefill;
    if (chunks.batch >= 2) {
      chunks.batch = (chunks.batch + 1) / 2;
    } else if (chunks.new_tokens >= 2) {
      chunks.new_tokens = (chunks.new_tokens + 1) / 2;
    } else {
      return s;
    }
    half.batch = (s.batch + 1) / 2;
    *micro_batches = 2;
    return half;
  }
  if (s.batch >= 2) {
    half.batch = (s.batch + 1) / 2;
  } else if (s.phase == Phase::kPrefill) {
    const int64_t fresh = s.new_tokens > 0 ? s.new_tokens : s.context;
    if (fresh < 2) return s;
    half.new_tokens = (fresh + 1) / 2;
  } else {
    return s;
  }
  *micro_batches = 2;
  return half;
}

StepGraph build_step_graph(const ModelAnalysis& model, const StepShape& whole) {
  validate_step_shape(model, whole);
  StepGraph graph{whole, {}, 1};
  const StepShape s = micro_batch_of(whole, &graph.micro_batches);
  for (const LayerPlanEntry& plan : model.plan) graph.layers.push_back(backbone_layer(model, s, plan));
  // Prefill: the last prompt token only; decode: every verified position (and
  // in a mixed step each prompt's last chunk token).
  const double head_tokens =
      static_cast<double>(s.batch * (s.phase == Phase::kDecode ? s.decode_tokens_per_sequence : 1) +
                          (s.is_mixed() ? s.mixed_prefill.batch : 0));
  graph.layers.push_back(output_head(model, head_tokens));
  if (s.phase == Phase::kDecode && s.include_draft && model.spec.draft &&
      model.spec.draft->routed_experts > 0) {
    for (int64_t stage = 0; stage < model.spec.draft->stages; ++stage) {
      graph.layers.push_back(draft_stage(model, s, stage));
    }
  }
  return graph;
}

}  // namespace v41sim
