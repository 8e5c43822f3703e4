// LayerPlan: for every layer, its role (what it owns, what it borrows), its
// display mode, and which layer's KV, index keys and top-k it reads.
//
// Derived from the model file alone (compress_ratios, kv_source_layer_ids,
// index_source_layer_ids, indexer, candidate_pool). The same rules give V4.1's
// Full / Reindex / Reuse groups, V4's CSA / HCA alternation and V3's MLA, so
// no family is special-cased.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/model/layer_role.h"
#include "sim/model/model_spec.h"

namespace v41sim {

struct LayerPlanEntry {
  int64_t layer = 0;
  LayerRole role = LayerRole::kWindowOnly;
  std::string mode;   // the model file's name for the role
  int64_t ratio = 0;  // tokens per global KV entry; 0 = window only
  bool has_window = false;
  std::optional<int64_t> kv_source;         // layer whose global KV this layer attends to
  std::optional<int64_t> index_key_source;  // layer whose index keys this layer scores
  std::optional<int64_t> topk_source;       // layer whose top-k selection this layer uses
  bool builds_candidate_pool = false;       // scores everything, then keeps the top blocks
  bool scores_in_candidate_pool = false;    // scores only inside the pool (cost flat in context)

  bool owns_kv() const { return kv_source == layer; }
  bool owns_index_keys() const { return index_key_source == layer; }
  bool selects_topk() const { return topk_source == layer; }
};

using LayerPlan = std::vector<LayerPlanEntry>;

// Raised for an inconsistent description; `field` is the attention.* key to blame.
class LayerPlanError : public std::runtime_error {
 public:
  LayerPlanError(std::string field, const std::string& what)
      : std::runtime_error(what), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

LayerPlan derive_layer_plan(const ModelSpec& model);

// A speculative draft stage (DSpark), the one shape both its parameter count
// and its step graph use: a window-only layer numbered past the output head,
// with a feed-forward of its own: the draft's routed experts at the backbone's
// expert width and no shared expert, or a dense MLP of the backbone's width
// where it has none (its widths are not published: the model file says so).
struct DraftStageShape {
  LayerPlanEntry plan;
  int64_t routed_experts = 0;
  int64_t top_k = 0;
  int64_t ffn_intermediate = 0;
};
DraftStageShape draft_stage_shape(const ModelSpec& model);  // model.draft set

}  // namespace v41sim
