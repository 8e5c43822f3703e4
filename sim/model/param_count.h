// Parameter counts and weight bytes, derived from the model description.
//
// Counts matrices only: norms, biases and mHC mixing vectors are omitted
// (well under 0.1% of any shipped model). The input embedding is counted in
// the total but not as active: a token reads one row of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/model/layer_plan.h"
#include "sim/model/model_spec.h"

namespace v41sim {

struct LayerParams {
  int64_t query = 0;        // q projection (low-rank when q_lora_rank > 0)
  int64_t kv = 0;           // per-token KV projection (window KV, MLA latent, GQA K/V)
  int64_t output = 0;       // output projection (grouped low-rank when set)
  int64_t compressor = 0;   // compressed-KV projection and pooling weights
  int64_t index_query = 0;  // indexer query and head weights
  int64_t index_key = 0;    // indexer key projection / compressor
  int64_t router = 0;
  int64_t shared_experts = 0;
  int64_t routed_experts = 0;  // all routed experts of the layer
  int64_t routed_expert_each = 0;
  int64_t dense_mlp = 0;
  int64_t mhc = 0;  // mHC's mixing projections, both sites (stored in their own format)
  // Of query and kv, the per-head up-projections (V3's MLA keys and values).
  int64_t query_up = 0;
  int64_t kv_up = 0;

  // What a tensor-parallel attention rank splits over its GPUs
  // (sim/graph/tensor_parallel.h): by heads, the per-head up-projections and
  // the output projection; by columns, the shared experts and dense MLPs,
  // where the rank is its own EP group (a rank inside a larger one runs them
  // whole on its slice of the tokens). The rest is whole on each GPU (the
  // routed experts spread by EP).
  int64_t split_by_heads() const { return query_up + kv_up + output; }
  int64_t split_by_columns() const { return shared_experts + dense_mlp; }
  int64_t attention() const { return query + kv + output + compressor + index_query + index_key; }
  int64_t total() const { return attention() + router + shared_experts + routed_experts + dense_mlp + mhc; }
};

struct ParamCounts {
  std::vector<LayerParams> layers;
  int64_t embedding = 0;
  int64_t lm_head = 0;
  int64_t engram = 0;  // host-resident n-gram tables
  // The speculative draft's stages (DSpark), alike; not part of the backbone.
  LayerParams draft_stage;
  int64_t draft_stages = 0;

  int64_t backbone_total() const;  // everything but Engram and the draft
  int64_t draft_total() const { return draft_stages * draft_stage.total(); }
  int64_t routed_expert_total() const;
  int64_t mhc_total() const;
  int64_t split_by_heads_total() const;    // the backbone's layers' (LayerParams)
  int64_t split_by_columns_total() const;  // the backbone's layers' (LayerParams)
};

struct ActiveParams {
  double decode_per_token = 0;   // all layers + output head
  double prefill_per_token = 0;  // per prompt token, long-prompt limit
  // CED only: the decoder layers run once per request on the last keep tokens.
  int64_t prefill_tail_tokens = 0;
  int64_t prefill_tail_params_per_token = 0;
};

struct WeightBytes {
  double routed_experts = 0;
  double dense = 0;      // attention, shared experts, routers, dense MLPs
  double embedding = 0;  // input embedding + output head
  double mhc = 0;        // mHC's mixing projections (replicated as the dense weights are)
  // The draft's stages: their routed experts (spread over the EP group, no
  // replicas) and the rest (attention, routers, mHC; replicated).
  double draft_experts = 0;
  double draft_other = 0;
  // Of dense and draft_other, what a tensor-parallel attention rank may split
  // over its GPUs (LayerParams::split_by_heads, split_by_columns); the
  // embedding and head split by vocabulary whole.
  struct TensorParallelSplit {
    double by_heads = 0;
    double by_columns = 0;
  };
  TensorParallelSplit dense_split;
  TensorParallelSplit draft_split;
  double host = 0;  // Engram tables in host memory
  double gpu_total() const { return routed_experts + dense + mhc + embedding + draft_experts + draft_other; }
};

// What WeightBytes::dense holds for this model, its parts named: e.g.
// "attention, shared experts, routers" (V4.1), "attention, dense MLPs" (Llama);
// with_mhc: with mHC's mixing projections beside it (as memory fit places them).
std::string dense_weights_label(const ModelSpec& model, bool with_mhc);

ParamCounts count_params(const ModelSpec& model, const LayerPlan& plan);
ActiveParams active_params(const ModelSpec& model, const LayerPlan& plan, const ParamCounts& counts);
WeightBytes weight_bytes(const ModelSpec& model, const ParamCounts& counts, const WeightFormats& formats);

}  // namespace v41sim
