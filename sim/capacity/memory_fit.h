// MemoryFit: how a model's weights and KV cache share each GPU's HBM.
//
// Placement model (the one DeepSeek's own deployment describes): routed
// experts are split over the EP group, each GPU holding routed/EP experts per
// layer; everything else (attention, shared expert, router, embedding and
// head) is either replicated on every GPU (data-parallel attention, the
// default) or sharded evenly over all GPUs (the arithmetic behind "552B / 8").
// A fixed fraction of HBM is held back for activations, workspace and the
// CUDA context: a named assumption, printed with every result. With
// replicated attention each session's KV lives on one GPU, so sessions are
// counted per GPU and summed; with sharded attention (tensor parallel) a
// session's KV is split over all GPUs, so sessions are counted on the total.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/input_error.h"
#include "sim/common/sourced_value.h"
#include "sim/hw/gpu_profile.h"
#include "sim/model/model_analysis.h"

namespace v41sim {

enum class DensePlacement { kReplicated, kSharded };

struct FitRequest {
  int64_t gpus = 8;
  int64_t ep = 8;
  int64_t context_tokens = 0;
  WeightFormats weights;  // usually the model's own; --weights-dtype overrides experts
  DensePlacement dense_placement = DensePlacement::kReplicated;
  SourcedValue reserve_fraction;
  int64_t redundant_experts = 0;  // extra expert replicas per EP group (EPLB)
  // Where a request whose weights and reserve overflow HBM is reported, and
  // what to try there: the command line's flags unless a file asked (a
  // deployment's pool names its own field). No field: the model's file and
  // the command line's --gpus/--ep, and the flags that would shrink what this
  // request holds (none where remedies is empty).
  InputLocation asked_at{};
  std::string remedies{};
  // Replicated placement: GPUs one attention rank spans (tensor-parallel
  // attention, sim/graph/tensor_parallel.h). Each GPU of a rank holds its
  // share of what the rank splits (LayerParams::split_by_heads, and
  // split_by_columns where the rank is its EP group; the embedding and head by
  // vocabulary) and the rest whole, and every GPU of it
  // holds the rank's whole KV (one latent a token): a rank keeps the sessions
  // one GPU's KV room holds. 1: data-parallel attention, a rank a GPU.
  int64_t attention_tp = 1;
};

struct FitResult {
  double hbm_bytes_per_gpu = 0;
  double routed_expert_bytes_per_gpu = 0;
  double dense_bytes_per_gpu = 0;      // attention, mHC mixing, shared experts, routers, dense MLPs
  double embedding_bytes_per_gpu = 0;  // embedding + head
  double draft_bytes_per_gpu = 0;      // the speculative draft's stages (DSpark)
  double weight_bytes_per_gpu = 0;
  double reserve_bytes_per_gpu = 0;
  double kv_bytes_per_gpu = 0;
  double session_bytes = 0;  // global KV at the context + bounded per-request state
  // GPUs a session's KV is split over: 1 where attention is replicated (data
  // parallel); sharded (tensor parallel), one per KV head at most (GQA's 8
  // heads over 8 GPUs), so MLA's and MQA's single latent is held whole by
  // every GPU of the group.
  int64_t kv_split_ways = 1;
  int64_t kv_tokens_per_gpu = 0;  // tokens whose KV (its share of each, when split) the GPU holds
  int64_t sessions_per_gpu = 0;   // sharded or tensor-parallel ranks: sessions / gpus, rounded down
  int64_t sessions = 0;
  double host_weight_bytes_per_node = 0;  // Engram tables (one copy per node)
  double host_dram_bytes_per_node = 0;
};

// What a GPU keeps back from weights and KV for activations, workspace and
// its CUDA context: `fraction` of its HBM (FitResult::reserve_bytes_per_gpu).
double reserve_bytes_per_gpu(const GpuProfile& gpu, double fraction);

// Throws InputError for an EP size that does not divide the expert slots
// (routed + redundant) or the GPU count, and for a model whose weights do not fit.
FitResult fit_memory(const ModelAnalysis& model, const GpuProfile& gpu, const FitRequest& request);
// The same split where the weights may overflow (kv_bytes_per_gpu <= 0 then,
// and no sessions fit): for outputs that time a shape and say whether it fits
// rather than refuse it. Throws for the parallelism as fit_memory does.
FitResult lay_out_memory(const ModelAnalysis& model, const GpuProfile& gpu, const FitRequest& request);

// The sessions the same request fits with each other index-key format the
// model file defines (other_index_key_formats: the FP8 key engines without
// an FP4 indexer store), by format, in order of their names.
struct SessionsWithIndexKeys {
  std::string format;
  int64_t sessions = 0;
  double global_bytes_per_token = 0;  // the model's global KV with those keys
};
std::vector<SessionsWithIndexKeys> sessions_with_other_index_keys(const ModelAnalysis& model,
                                                                  const GpuProfile& gpu,
                                                                  const FitRequest& request);

std::string_view placement_name(DensePlacement placement);

// The reserve used unless the user gives one: a named assumption.
SourcedValue default_reserve_fraction();

}  // namespace v41sim
