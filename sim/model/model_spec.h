// ModelSpec: the typed form of one models/*.yaml file.
//
// One schema for every family (V3, V3.2, V4-Flash/Pro, V4.1-Flash, dense GQA):
// optional blocks (indexer, candidate pool, CED, Engram, draft) switch
// features on; per-layer lists mirror the released configs
// (compress_ratios, kv_source_layer_ids, index_source_layer_ids). Nothing in
// here is a derived total: KV bytes, parameters and the layer plan are
// computed from these fields elsewhere (layer_plan, kv_layout, param_count).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/common/sourced_value.h"
#include "sim/model/block_scaled_format.h"
#include "sim/model/layer_role.h"

namespace v41sim {

// The most tokens a context (and so a prompt or an answer) may hold: exact
// in 32 bits, past any model's context.
inline constexpr int64_t kMostContextTokens = 2147483647;

// How a layer projects hidden states to keys and values.
enum class KvProjection {
  kSharedLatent,  // V4 / V4.1: one latent vector per token is both K and V (MQA)
  kMla,           // V3 / V3.2: low-rank latent + decoupled RoPE key, up-projected per head
  kSeparateKv,    // GQA: separate K and V heads
};

// One run of values inside a cache entry, e.g. "448 nope dims in fp8 with an
// e8m0 scale per 64". `count` is resolved from a named dimension at load time.
struct CacheEntryPart {
  std::string dimension;  // latent | nope | rope | index_key, or "" for a literal count
  int64_t count = 0;
  BlockScaledFormat format;
};

struct CacheEntryFormat {
  std::string name;
  std::vector<CacheEntryPart> parts;
  int64_t align_bytes = 1;  // entry padded up to a multiple of this
  int64_t bytes = 0;        // computed by the loader from parts and alignment
  std::string source;       // where the model file says the format comes from, if it says
};

struct IndexerSpec {
  int64_t heads = 0;
  int64_t head_dim = 0;
  int64_t topk = 0;
  std::vector<int64_t> on_ratios;  // compress ratios that carry an indexer; empty = all
  std::string key_cache;           // cache format name of one index key
};

struct CandidatePoolSpec {
  int64_t source_layer = 0;
  int64_t top_blocks = 0;
  int64_t block_size = 0;
  int64_t positions() const { return top_blocks * block_size; }
};

// Compressor: how many overlapping windows feed one compressed entry (V4's
// ratio-4 compressor overlaps two windows) and how its decode state is held.
struct CompressorSpec {
  std::map<int64_t, int64_t> overlap_by_ratio;    // ratio -> windows per entry
  std::optional<BlockScaledFormat> state_format;  // per-request running state
  int64_t state_buffers = 0;                      // e.g. kv + score = 2
  std::string state_source;                       // provenance of the state model
  int64_t overlap(int64_t ratio) const;           // 1 unless listed
};

struct AttentionSpec {
  int64_t num_heads = 0;
  int64_t head_dim = 0;  // query/key head dim (incl. RoPE dims)
  int64_t v_head_dim = 0;
  int64_t rope_dim = 0;
  int64_t q_lora_rank = 0;  // 0: direct query projection
  KvProjection kv_projection = KvProjection::kSharedLatent;
  int64_t kv_heads = 0;
  int64_t kv_lora_rank = 0;              // MLA only
  int64_t output_groups = 0;             // 0: plain output projection
  int64_t output_lora_rank = 0;          // grouped low-rank output (V4 wo_a / wo_b)
  int64_t sliding_window = 0;            // 0: no window cache
  std::vector<int64_t> compress_ratios;  // one per layer; 1 = one entry per token
  std::optional<std::vector<int64_t>> kv_source_layer_ids;
  std::optional<std::vector<int64_t>> index_source_layer_ids;
  std::optional<IndexerSpec> indexer;
  std::optional<CandidatePoolSpec> candidate_pool;
  CompressorSpec compressor;
  std::string main_cache;    // cache format of one global KV entry
  std::string window_cache;  // cache format of one window token; "" if no window
  std::map<LayerRole, std::string> mode_labels;
};

struct MoeSpec {
  int64_t routed_experts = 0;
  int64_t shared_experts = 0;
  int64_t top_k = 0;
  int64_t expert_intermediate = 0;
};

// Leading layers whose feed-forward is a dense (gated) MLP instead of MoE:
// V3's first 3 layers, or every layer of a dense model.
struct DenseMlpSpec {
  int64_t leading_layers = 0;
  int64_t intermediate = 0;
};

struct WeightFormats {
  BlockScaledFormat routed_experts;
  BlockScaledFormat dense;      // attention, shared experts, router, dense MLPs
  BlockScaledFormat embedding;  // input embedding and output head
  std::string source;
};

// Causal encoder-decoder (V4.1): prompt tokens stop after the encoder.
struct CedSpec {
  int64_t encoder_layers = 0;       // layers [0, encoder_layers) run on every prompt token
  int64_t decoder_keep_tokens = 0;  // decoder layers run on this many last prompt tokens
};

struct MhcSpec {
  int64_t streams = 0;
  int64_t sinkhorn_iters = 0;
  bool single_pass = false;
  // The learned projection from the flattened streams to the mixing logits
  // ((2 + streams) x streams of them), one per mHC site: its storage format.
  BlockScaledFormat projection;
};

// Engram n-gram tables, held in host memory.
struct EngramSpec {
  std::vector<int64_t> layers;
  std::vector<int64_t> table_rows;  // one entry per table
  int64_t row_dim = 0;
  int64_t heads = 0;
  int64_t max_ngram = 0;
  std::string row_cache;  // entry format of one row (values + scale)
};

// Speculative draft stages (V4.1 DSpark, V3 MTP).
struct DraftSpec {
  std::string kind;
  int64_t stages = 0;
  int64_t block_size = 0;
  std::vector<int64_t> target_layers;
  int64_t routed_experts = 0;
  int64_t top_k = 0;
  // Chance that a draft token is accepted given the ones before it were.
  SourcedValue acceptance;
};

struct ModelSpec {
  std::string name;
  std::string file;  // where it was loaded from, for messages
  std::string source;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t vocab_size = 0;
  int64_t max_context = 0;
  bool tied_embeddings = false;
  AttentionSpec attention;
  std::optional<MoeSpec> moe;  // absent: dense model
  DenseMlpSpec dense_mlp;
  WeightFormats weights;
  std::map<std::string, CacheEntryFormat> cache_formats;
  std::optional<CedSpec> ced;
  std::optional<MhcSpec> mhc;
  std::optional<EngramSpec> engram;
  std::optional<DraftSpec> draft;
  // Published figures, kept only so tests and the claims check can compare.
  std::map<std::string, double> published;

  const CacheEntryFormat& cache(const std::string& name) const;
  bool is_moe_layer(int64_t layer) const { return moe.has_value() && layer >= dense_mlp.leading_layers; }
};

}  // namespace v41sim
