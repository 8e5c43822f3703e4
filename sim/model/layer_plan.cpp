#include "sim/model/layer_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace v41sim {
namespace {

// Latest element of `ids` that is <= layer, if any.
std::optional<int64_t> latest_at_or_before(const std::vector<int64_t>& ids, int64_t layer) {
  std::optional<int64_t> found;
  for (int64_t id : ids) {
    if (id <= layer) found = id;
  }
  return found;
}

bool contains(const std::vector<int64_t>& ids, int64_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

class PlanBuilder {
 public:
  explicit PlanBuilder(const ModelSpec& model) : model_(model), a_(model.attention) {
    kv_sources_ = a_.kv_source_layer_ids ? *a_.kv_source_layer_ids : default_kv_sources();
    index_sources_ = a_.index_source_layer_ids ? *a_.index_source_layer_ids : default_index_sources();
    check_sources();
  }

  LayerPlan build() const {
    LayerPlan plan;
    for (int64_t layer = 0; layer < model_.num_layers; ++layer) plan.push_back(entry_for(layer));
    check_candidate_pool(plan);
    return plan;
  }

 private:
  int64_t ratio(int64_t layer) const { return a_.compress_ratios[static_cast<std::size_t>(layer)]; }

  bool indexed_ratio(int64_t r) const {
    return a_.indexer && (a_.indexer->on_ratios.empty() || contains(a_.indexer->on_ratios, r));
  }

  std::vector<int64_t> default_kv_sources() const {
    std::vector<int64_t> ids;
    for (int64_t l = 0; l < model_.num_layers; ++l) {
      if (ratio(l) > 0) ids.push_back(l);
    }
    return ids;
  }

  std::vector<int64_t> default_index_sources() const {
    std::vector<int64_t> ids;
    for (int64_t l : kv_sources_) {
      if (indexed_ratio(ratio(l))) ids.push_back(l);
    }
    return ids;
  }

  void check_sources() const {
    for (int64_t l : kv_sources_) {
      if (ratio(l) == 0) {
        throw LayerPlanError("kv_source_layer_ids",
                             fmt::format("layer {} has compress ratio 0 (window only) and "
                                         "cannot be a KV source",
                                         l));
      }
    }
    for (int64_t l : index_sources_) {
      if (!a_.indexer) {
        throw LayerPlanError("index_source_layer_ids",
                             "index sources are listed but the model has no indexer block");
      }
      if (ratio(l) == 0) {
        throw LayerPlanError("index_source_layer_ids",
                             fmt::format("layer {} has compress ratio 0 and cannot select top-k", l));
      }
    }
  }

  std::string label(LayerRole role, int64_t layer) const {
    const auto it = a_.mode_labels.find(role);
    if (it == a_.mode_labels.end()) {
      throw LayerPlanError(
          "mode_labels",
          fmt::format("layer {} has role '{}', which mode_labels does not name", layer, role_key(role)));
    }
    return it->second;
  }

  LayerPlanEntry entry_for(int64_t layer) const {
    LayerPlanEntry e;
    e.layer = layer;
    e.ratio = ratio(layer);
    e.has_window = a_.sliding_window > 0;
    if (e.ratio == 0) {
      e.role = LayerRole::kWindowOnly;
      e.mode = label(e.role, layer);
      return e;
    }
    e.kv_source = latest_at_or_before(kv_sources_, layer);
    if (!e.kv_source) {
      throw LayerPlanError(
          "kv_source_layer_ids",
          fmt::format("layer {} (compress ratio {}) has no KV source at or before it", layer, e.ratio));
    }
    if (ratio(*e.kv_source) != e.ratio) {
      throw LayerPlanError("kv_source_layer_ids",
                           fmt::format("layer {} (ratio {}) reads KV from layer {} (ratio {}); "
                                       "ratios must match",
                                       layer, e.ratio, *e.kv_source, ratio(*e.kv_source)));
    }
    const bool source_indexed = contains(index_sources_, *e.kv_source);
    if (e.owns_kv()) {
      e.role = source_indexed ? LayerRole::kOwnIndexed : LayerRole::kOwnDense;
      if (source_indexed) e.index_key_source = e.topk_source = layer;
    } else if (contains(index_sources_, layer)) {
      if (!source_indexed) {
        throw LayerPlanError("index_source_layer_ids",
                             fmt::format("layer {} re-selects top-k from layer {}'s index keys, "
                                         "but layer {} has none",
                                         layer, *e.kv_source, *e.kv_source));
      }
      e.role = LayerRole::kReindex;
      e.index_key_source = *e.kv_source;
      e.topk_source = layer;
    } else {
      e.role = LayerRole::kReuse;
      const auto selector = latest_at_or_before(index_sources_, layer);
      if (selector && *selector >= *e.kv_source) e.topk_source = selector;
    }
    e.mode = label(e.role, layer);
    if (a_.candidate_pool) {
      e.builds_candidate_pool = layer == a_.candidate_pool->source_layer;
      e.scores_in_candidate_pool =
          e.role == LayerRole::kReindex && e.index_key_source == a_.candidate_pool->source_layer;
    }
    return e;
  }

  void check_candidate_pool(const LayerPlan& plan) const {
    if (!a_.candidate_pool) return;
    const LayerPlanEntry& source = plan[static_cast<std::size_t>(a_.candidate_pool->source_layer)];
    if (source.role != LayerRole::kOwnIndexed) {
      throw LayerPlanError(
          "candidate_pool",
          fmt::format("candidate pool source layer {} must own KV and index keys", source.layer));
    }
  }

  const ModelSpec& model_;
  const AttentionSpec& a_;
  std::vector<int64_t> kv_sources_;
  std::vector<int64_t> index_sources_;
};

}  // namespace

LayerPlan derive_layer_plan(const ModelSpec& model) { return PlanBuilder(model).build(); }

DraftStageShape draft_stage_shape(const ModelSpec& model) {
  DraftStageShape shape;
  shape.plan.layer = model.num_layers + 1;
  shape.plan.role = LayerRole::kWindowOnly;
  shape.plan.mode = "Draft";
  shape.plan.has_window = model.attention.sliding_window > 0;
  shape.routed_experts = model.draft->routed_experts;
  shape.top_k = model.draft->top_k;
  shape.ffn_intermediate = model.moe ? model.moe->expert_intermediate : model.dense_mlp.intermediate;
  return shape;
}

}  // namespace v41sim
