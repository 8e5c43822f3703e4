#include "sim/model/param_count.h"

namespace v41sim {
namespace {

// Gated MLP: gate, up and down projections.
constexpr int64_t kGatedMlpMatrices = 3;

int64_t latent_dim(const AttentionSpec& a) { return a.kv_heads * a.head_dim; }

// A pooling compressor: KV and gate projections over `overlap` windows plus a
// learned position bias per slot; ratio 1 is a plain projection.
int64_t compressor_params(int64_t hidden, int64_t ratio, int64_t overlap, int64_t dim) {
  if (ratio <= 1) return hidden * dim;
  return 2 * hidden * overlap * dim + ratio * overlap * dim;
}

int64_t query_params(const ModelSpec& m, int64_t heads, int64_t head_dim) {
  const int64_t q_lora = m.attention.q_lora_rank;
  if (q_lora > 0) return q_lora * heads * head_dim;
  return m.hidden_size * heads * head_dim;
}

int64_t kv_params(const ModelSpec& m, const LayerPlanEntry& e) {
  const AttentionSpec& a = m.attention;
  const int64_t h = m.hidden_size;
  switch (a.kv_projection) {
    case KvProjection::kSharedLatent:
      return e.has_window ? h * latent_dim(a) : 0;
    case KvProjection::kMla: {
      const int64_t nope = a.head_dim - a.rope_dim;
      return h * (a.kv_lora_rank + a.rope_dim) + a.kv_lora_rank * a.num_heads * (nope + a.v_head_dim);
    }
    case KvProjection::kSeparateKv:
      return h * a.kv_heads * (a.head_dim + a.v_head_dim);
  }
  return 0;
}

LayerParams layer_params(const ModelSpec& m, const LayerPlanEntry& e) {
  const AttentionSpec& a = m.attention;
  const int64_t h = m.hidden_size;
  LayerParams p;
  p.query_up = query_params(m, a.num_heads, a.head_dim);
  p.query = (a.q_lora_rank > 0 ? h * a.q_lora_rank : 0) + p.query_up;
  p.kv = kv_params(m, e);
  if (a.kv_projection == KvProjection::kMla)
    p.kv_up = a.kv_lora_rank * a.num_heads * (a.head_dim - a.rope_dim + a.v_head_dim);
  const int64_t attn_out = a.num_heads * a.v_head_dim;
  p.output = a.output_groups > 0 ? attn_out * a.output_lora_rank + a.output_groups * a.output_lora_rank * h
                                 : attn_out * h;
  if (e.owns_kv() && a.kv_projection == KvProjection::kSharedLatent) {
    p.compressor = compressor_params(h, e.ratio, a.compressor.overlap(e.ratio), latent_dim(a));
  }
  if (e.selects_topk()) {
    p.index_query = query_params(m, a.indexer->heads, a.indexer->head_dim) + h * a.indexer->heads;
  }
  if (e.owns_index_keys()) {
    p.index_key = compressor_params(h, e.ratio, a.compressor.overlap(e.ratio), a.indexer->head_dim);
  }
  if (m.is_moe_layer(e.layer)) {
    p.router = h * m.moe->routed_experts;
    p.routed_expert_each = kGatedMlpMatrices * h * m.moe->expert_intermediate;
    p.routed_experts = m.moe->routed_experts * p.routed_expert_each;
    p.shared_experts = m.moe->shared_experts * p.routed_expert_each;
  } else {
    p.dense_mlp = kGatedMlpMatrices * h * m.dense_mlp.intermediate;
  }
  if (m.mhc) {
    // Attention's site and the FFN's: (2 + s) s mixing logits from s x hidden flattened streams.
    const int64_t s = m.mhc->streams;
    p.mhc = 2 * (2 + s) * s * s * h;
  }
  return p;
}

// Parameters one token reads in a layer: attention, router, shared and top-k experts.
int64_t layer_active(const ModelSpec& m, const LayerParams& p) {
  const int64_t top_k = m.moe ? m.moe->top_k : 0;
  return p.attention() + p.router + p.shared_experts + top_k * p.routed_expert_each + p.dense_mlp + p.mhc;
}

// A draft stage (draft_stage_shape, the shape its step graph builds): its
// attention as a backbone layer of that plan has it, its own feed-forward.
LayerParams draft_stage_params(const ModelSpec& m) {
  const DraftStageShape shape = draft_stage_shape(m);
  LayerParams p = layer_params(m, shape.plan);
  const int64_t h = m.hidden_size;
  p.router = p.shared_experts = p.routed_experts = p.routed_expert_each = p.dense_mlp = 0;
  if (shape.routed_experts > 0) {
    p.router = h * shape.routed_experts;
    p.routed_expert_each = kGatedMlpMatrices * h * shape.ffn_intermediate;
    p.routed_experts = shape.routed_experts * p.routed_expert_each;
  } else {
    p.dense_mlp = kGatedMlpMatrices * h * shape.ffn_intermediate;
  }
  return p;
}

}  // namespace

int64_t ParamCounts::backbone_total() const {
  int64_t total = embedding + lm_head;
  for (const LayerParams& p : layers) total += p.total();
  return total;
}

int64_t ParamCounts::routed_expert_total() const {
  int64_t total = 0;
  for (const LayerParams& p : layers) total += p.routed_experts;
  return total;
}

int64_t ParamCounts::mhc_total() const {
  int64_t total = 0;
  for (const LayerParams& p : layers) total += p.mhc;
  return total;
}

int64_t ParamCounts::split_by_heads_total() const {
  int64_t total = 0;
  for (const LayerParams& p : layers) total += p.split_by_heads();
  return total;
}

int64_t ParamCounts::split_by_columns_total() const {
  int64_t total = 0;
  for (const LayerParams& p : layers) total += p.split_by_columns();
  return total;
}

ParamCounts count_params(const ModelSpec& model, const LayerPlan& plan) {
  ParamCounts counts;
  for (const LayerPlanEntry& e : plan) counts.layers.push_back(layer_params(model, e));
  counts.embedding = model.vocab_size * model.hidden_size;
  counts.lm_head = model.tied_embeddings ? 0 : model.vocab_size * model.hidden_size;
  if (model.engram) {
    for (int64_t rows : model.engram->table_rows) counts.engram += rows * model.engram->row_dim;
  }
  if (model.draft) {
    counts.draft_stage = draft_stage_params(model);
    counts.draft_stages = model.draft->stages;
  }
  return counts;
}

ActiveParams active_params(const ModelSpec& model, const LayerPlan& plan, const ParamCounts& counts) {
  ActiveParams active;
  // The output head runs for every decoded token, but for one prompt token only.
  const int64_t head = model.tied_embeddings ? counts.embedding : counts.lm_head;
  double decode = static_cast<double>(head);
  double prefill = 0;
  int64_t tail = 0;
  for (const LayerPlanEntry& e : plan) {
    const LayerParams& p = counts.layers[static_cast<std::size_t>(e.layer)];
    const int64_t full = layer_active(model, p);
    decode += static_cast<double>(full);
    const bool encoder_layer = !model.ced || e.layer < model.ced->encoder_layers;
    if (encoder_layer) {
      prefill += static_cast<double>(full);
    } else {
      // CED: every prompt token still produces the decoder's global KV and
      // index keys (layer 20 in V4.1); the rest runs on the kept tail only.
      const int64_t kv_producers = p.compressor + p.index_key;
      prefill += static_cast<double>(kv_producers);
      tail += full - kv_producers;
    }
  }
  active.decode_per_token = decode;
  active.prefill_per_token = prefill;
  if (model.ced) {
    active.prefill_tail_tokens = model.ced->decoder_keep_tokens;
    active.prefill_tail_params_per_token = tail;
  }
  return active;
}

std::string dense_weights_label(const ModelSpec& model, bool with_mhc) {
  std::string label = "attention";
  if (with_mhc && model.mhc) label += ", mHC mixing";
  if (model.dense_mlp.leading_layers > 0) label += ", dense MLPs";
  if (model.moe && model.moe->shared_experts > 0) label += ", shared experts";
  if (model.moe) label += ", routers";
  return label;
}

WeightBytes weight_bytes(const ModelSpec& model, const ParamCounts& counts, const WeightFormats& formats) {
  WeightBytes bytes;
  const auto routed = static_cast<double>(counts.routed_expert_total());
  const auto embedding = static_cast<double>(counts.embedding + counts.lm_head);
  const auto mhc = static_cast<double>(counts.mhc_total());
  const double dense = static_cast<double>(counts.backbone_total()) - routed - embedding - mhc;
  bytes.routed_experts = routed * formats.routed_experts.bytes_per_value();
  bytes.dense = dense * formats.dense.bytes_per_value();
  const double dense_value = formats.dense.bytes_per_value();
  bytes.dense_split = {static_cast<double>(counts.split_by_heads_total()) * dense_value,
                       static_cast<double>(counts.split_by_columns_total()) * dense_value};
  if (model.mhc) bytes.mhc = mhc * model.mhc->projection.bytes_per_value();
  bytes.embedding = embedding * formats.embedding.bytes_per_value();
  if (counts.draft_stages > 0) {
    const auto stages = static_cast<double>(counts.draft_stages);
    const LayerParams& d = counts.draft_stage;
    bytes.draft_experts =
        stages * static_cast<double>(d.routed_experts) * formats.routed_experts.bytes_per_value();
    bytes.draft_other =
        stages *
        (static_cast<double>(d.total() - d.routed_experts - d.mhc) * formats.dense.bytes_per_value() +
         (model.mhc ? static_cast<double>(d.mhc) * model.mhc->projection.bytes_per_value() : 0));
    bytes.draft_split = {stages * static_cast<double>(d.split_by_heads()) * dense_value,
                         stages * static_cast<double>(d.split_by_columns()) * dense_value};
  }
  if (model.engram) {
    int64_t rows = 0;
    for (int64_t r : model.engram->table_rows) rows += r;
    bytes.host = static_cast<double>(rows * model.cache(model.engram->row_cache).bytes);
  }
  return bytes;
}

}  // namespace v41sim
