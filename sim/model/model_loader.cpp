#include "sim/model/model_loader.h"

#include <fmt/format.h>

#include <set>

#include "sim/model/draft_yield.h"
#include "sim/model/layer_plan.h"

namespace v41sim {
namespace {

// The most a dimension may be: a decade or more past every model we know, and
// small enough that the counts derived from them (a layer's experts x width x
// hidden x layers, a window's bytes over all layers) stay exact in 64 bits,
// where a typo like vocab_size: 1e15 once made the parameter count negative.
struct Most {
  int64_t value;
  const char* what;
};
constexpr Most kLayers{2048, "layers"};
constexpr Most kWidth{int64_t{1} << 17, "a hidden, rank or MLP width"};
constexpr Most kDenseWidth{int64_t{1} << 20, "a dense MLP width"};
constexpr Most kVocab{int64_t{1} << 24, "tokens in a vocabulary"};
constexpr Most kContext{kMostContextTokens, "tokens of context (exact in 32 bits)"};
constexpr Most kHeads{4096, "heads or groups"};
constexpr Most kHeadDim{4096, "dims of a head"};
constexpr Most kTokensRead{int64_t{1} << 20, "tokens a layer keeps or selects"};
constexpr Most kExperts{32768, "experts"};
constexpr Most kSharedExperts{256, "shared experts"};
constexpr Most kSmall{1024, "for this count"};
constexpr Most kTableRows{int64_t{1} << 40, "rows of a table"};

// A whole number up to `most`: positive, or, for a count that may be none, 0 or more.
int64_t at_most(const YamlNode& node, const Most& most, bool may_be_zero) {
  const int64_t value = may_be_zero ? node.as_non_negative_int() : node.as_positive_int();
  if (value > most.value) {
    node.fail(fmt::format("expected at most {} ({}), got {}", most.value, most.what, value));
  }
  return value;
}

int64_t dimension(const YamlNode& node, const Most& most) { return at_most(node, most, false); }

// 0 or more up to `most`, or `absent` where the field is left out.
int64_t optional_dimension(const YamlNode& node, std::string_view key, int64_t absent, const Most& most) {
  const auto value = node.optional(key);
  return value ? at_most(*value, most, true) : absent;
}

int64_t read_layer_id(const YamlNode& node, int64_t num_layers) {
  const int64_t id = node.as_int();
  if (id < 0 || id >= num_layers) {
    node.fail(fmt::format("layer id {} is out of range [0, {})", id, num_layers));
  }
  return id;
}

std::vector<int64_t> read_layer_ids(const YamlNode& node, int64_t num_layers) {
  std::vector<int64_t> ids;
  for (const YamlNode& item : node.elements()) {
    const int64_t id = read_layer_id(item, num_layers);
    if (!ids.empty() && id <= ids.back()) item.fail("layer ids must be strictly increasing");
    ids.push_back(id);
  }
  return ids;
}

KvProjection read_kv_projection(const YamlNode& node) {
  const std::string kind = node.as_string();
  if (kind == "shared_latent") return KvProjection::kSharedLatent;
  if (kind == "mla") return KvProjection::kMla;
  if (kind == "separate") return KvProjection::kSeparateKv;
  node.fail("unknown kv projection '" + kind + "' (expected one of: shared_latent, mla, separate)");
}

IndexerSpec read_indexer(const YamlNode& node) {
  node.expect_only({"heads", "head_dim", "topk", "on_ratios", "key_cache"});
  IndexerSpec spec;
  spec.heads = dimension(node.required("heads"), kHeads);
  spec.head_dim = dimension(node.required("head_dim"), kHeadDim);
  spec.topk = dimension(node.required("topk"), kTokensRead);
  if (const auto ratios = node.optional("on_ratios")) spec.on_ratios = ratios->as_int_list();
  spec.key_cache = node.required("key_cache").as_string();
  return spec;
}

CandidatePoolSpec read_candidate_pool(const YamlNode& node, int64_t num_layers) {
  node.expect_only({"source_layer", "top_blocks", "block_size"});
  CandidatePoolSpec spec;
  spec.source_layer = read_layer_id(node.required("source_layer"), num_layers);
  spec.top_blocks = dimension(node.required("top_blocks"), kTokensRead);
  spec.block_size = dimension(node.required("block_size"), kSmall);
  return spec;
}

CompressorSpec read_compressor(const YamlNode& node) {
  node.expect_only({"overlap", "state"});
  CompressorSpec spec;
  if (const auto overlap = node.optional("overlap")) {
    for (const YamlNode& item : overlap->elements()) {
      item.expect_only({"ratio", "windows"});
      spec.overlap_by_ratio[dimension(item.required("ratio"), kSmall)] =
          dimension(item.required("windows"), kSmall);
    }
  }
  if (const auto state = node.optional("state")) {
    state->expect_only({"dtype", "buffers", "source"});
    spec.state_format = read_block_scaled_format(*state);
    spec.state_buffers = dimension(state->required("buffers"), kSmall);
    spec.state_source = state->required("source").as_string();
  }
  return spec;
}

std::map<LayerRole, std::string> read_mode_labels(const YamlNode& node) {
  std::map<LayerRole, std::string> labels;
  for (const auto& [key, value] : node.entries()) {
    const auto role = parse_layer_role(key);
    if (!role) {
      InputLocation where = value.location();
      throw InputError(where,
                       "unknown layer role (expected one of: window_only, own_indexed, own_dense, "
                       "reindex, reuse)");
    }
    labels[*role] = value.as_string();
  }
  return labels;
}

// Each layer's compression ratio (1: every token kept), one per layer; none
// given: every layer keeps every token.
std::vector<int64_t> read_compress_ratios(const YamlNode& node, int64_t num_layers) {
  const auto ratios = node.optional("compress_ratios");
  if (!ratios) return std::vector<int64_t>(static_cast<std::size_t>(num_layers), 1);
  std::vector<int64_t> out = ratios->as_int_list();
  if (static_cast<int64_t>(out.size()) != num_layers) {
    ratios->fail(fmt::format("expected {} entries (one per layer), got {}", num_layers, out.size()));
  }
  for (int64_t r : out) {
    if (r < 0) ratios->fail(fmt::format("compress ratios must be >= 0, got {}", r));
  }
  return out;
}

// What sparse and compressed attention add: the indexer, the candidate pool
// Reindex layers pick from, and the compressor.
void read_sparse_parts(const YamlNode& node, int64_t num_layers, AttentionSpec& spec) {
  if (const auto indexer = node.optional("indexer")) spec.indexer = read_indexer(*indexer);
  if (const auto pool = node.optional("candidate_pool")) {
    spec.candidate_pool = read_candidate_pool(*pool, num_layers);
    // Reindex layers pick their top-k among the pool's positions: a pool
    // smaller than k would leave them fewer than k to attend to.
    const int64_t positions = spec.candidate_pool->top_blocks * spec.candidate_pool->block_size;
    if (spec.indexer && positions < spec.indexer->topk) {
      pool->required("top_blocks")
          .fail(fmt::format(
              "expected a pool of at least the indexer's top-k ({} positions), got {} blocks x {} "
              "= {}",
              spec.indexer->topk, spec.candidate_pool->top_blocks, spec.candidate_pool->block_size,
              positions));
    }
  }
  if (const auto compressor = node.optional("compressor")) {
    spec.compressor = read_compressor(*compressor);
  }
}

AttentionSpec read_attention(const YamlNode& node, int64_t num_layers) {
  node.expect_only({"num_heads",
                    "head_dim",
                    "v_head_dim",
                    "rope_dim",
                    "q_lora_rank",
                    "kv_projection",
                    "kv_heads",
                    "kv_lora_rank",
                    "output_groups",
                    "output_lora_rank",
                    "sliding_window",
                    "compress_ratios",
                    "kv_source_layer_ids",
                    "index_source_layer_ids",
                    "indexer",
                    "candidate_pool",
                    "compressor",
                    "main_cache",
                    "window_cache",
                    "mode_labels"});
  AttentionSpec spec;
  spec.num_heads = dimension(node.required("num_heads"), kHeads);
  spec.head_dim = dimension(node.required("head_dim"), kHeadDim);
  spec.v_head_dim = optional_dimension(node, "v_head_dim", spec.head_dim, kHeadDim);
  spec.rope_dim = optional_dimension(node, "rope_dim", 0, kHeadDim);
  spec.q_lora_rank = optional_dimension(node, "q_lora_rank", 0, kWidth);
  spec.kv_projection = read_kv_projection(node.required("kv_projection"));
  spec.kv_heads = dimension(node.required("kv_heads"), kHeads);
  if (spec.kv_projection == KvProjection::kMla) {
    spec.kv_lora_rank = dimension(node.required("kv_lora_rank"), kWidth);
  } else if (spec.rope_dim > spec.head_dim) {  // MLA's RoPE dims come on top of its latent
    node.required("rope_dim")
        .fail(
            fmt::format("expected at most head_dim ({}) rotary dims, got {}", spec.head_dim, spec.rope_dim));
  }
  spec.output_groups = optional_dimension(node, "output_groups", 0, kHeads);
  if (spec.output_groups > 0) {
    spec.output_lora_rank = dimension(node.required("output_lora_rank"), kWidth);
  }
  spec.sliding_window = optional_dimension(node, "sliding_window", 0, kTokensRead);
  spec.compress_ratios = read_compress_ratios(node, num_layers);
  if (const auto ids = node.optional("kv_source_layer_ids")) {
    spec.kv_source_layer_ids = read_layer_ids(*ids, num_layers);
  }
  if (const auto ids = node.optional("index_source_layer_ids")) {
    spec.index_source_layer_ids = read_layer_ids(*ids, num_layers);
  }
  read_sparse_parts(node, num_layers, spec);
  spec.main_cache = node.required("main_cache").as_string();
  if (spec.sliding_window > 0) spec.window_cache = node.required("window_cache").as_string();
  spec.mode_labels = read_mode_labels(node.required("mode_labels"));
  return spec;
}

// Named dimensions a cache entry part may refer to, derived from attention.
std::map<std::string, int64_t> cache_dimensions(const AttentionSpec& a) {
  int64_t latent = 0;
  switch (a.kv_projection) {
    case KvProjection::kSharedLatent:
      latent = a.kv_heads * a.head_dim;
      break;
    case KvProjection::kMla:
      latent = a.kv_lora_rank + a.rope_dim;
      break;
    case KvProjection::kSeparateKv:
      latent = a.kv_heads * (a.head_dim + a.v_head_dim);  // K and V
      break;
  }
  std::map<std::string, int64_t> dims{
      {"latent", latent}, {"rope", a.rope_dim}, {"nope", latent - a.rope_dim}};
  if (a.indexer) dims["index_key"] = a.indexer->head_dim;
  return dims;
}

CacheEntryFormat read_cache_format(const std::string& name, const YamlNode& node,
                                   const std::map<std::string, int64_t>& dims) {
  node.expect_only({"parts", "align_bytes", "source"});
  CacheEntryFormat format;
  format.name = name;
  format.align_bytes = optional_dimension(node, "align_bytes", 1, kSmall);
  if (const auto source = node.optional("source")) format.source = source->as_string();
  if (format.align_bytes == 0) node.required("align_bytes").fail("expected a positive integer");
  int64_t bytes = 0;
  for (const YamlNode& item : node.required("parts").elements()) {
    item.expect_only({"of", "count", "dtype", "scale_dtype", "scale_group"});
    CacheEntryPart part;
    part.format = read_block_scaled_format(item);
    if (const auto of = item.optional("of")) {
      part.dimension = of->as_string();
      const auto it = dims.find(part.dimension);
      if (it == dims.end()) {
        of->fail("unknown dimension '" + part.dimension + "' (expected latent, nope, rope or index_key)");
      }
      part.count = it->second;
    } else {
      part.count = dimension(item.required("count"), kWidth);
    }
    const int64_t group = part.format.scale ? part.format.scale_group : 1;
    if (part.count % group != 0 || (part.count * bits_of(part.format.values)) % 8 != 0) {
      item.fail(
          fmt::format("{} values do not fill whole scale groups of {} and whole bytes", part.count, group));
    }
    bytes += part.format.bytes_for(part.count);
    format.parts.push_back(part);
  }
  format.bytes = (bytes + format.align_bytes - 1) / format.align_bytes * format.align_bytes;
  return format;
}

void check_cache_reference(const YamlNode& at, const std::string& name,
                           const std::map<std::string, CacheEntryFormat>& formats) {
  if (formats.count(name) == 0) at.fail("names cache format '" + name + "', which cache_formats lacks");
}

MoeSpec read_moe(const YamlNode& node) {
  node.expect_only({"routed_experts", "shared_experts", "top_k", "expert_intermediate", "scoring"});
  MoeSpec spec;
  spec.routed_experts = dimension(node.required("routed_experts"), kExperts);
  spec.shared_experts = at_most(node.required("shared_experts"), kSharedExperts, true);
  spec.top_k = node.required("top_k").as_positive_int();
  if (spec.top_k > spec.routed_experts) node.required("top_k").fail("top_k exceeds routed_experts");
  spec.expert_intermediate = dimension(node.required("expert_intermediate"), kWidth);
  if (node.has("scoring")) node.required("scoring").as_string();
  return spec;
}

DenseMlpSpec read_dense_mlp(const YamlNode& node, int64_t num_layers) {
  node.expect_only({"leading_layers", "intermediate"});
  DenseMlpSpec spec;
  const YamlNode layers = node.required("leading_layers");
  spec.leading_layers = layers.as_positive_int();
  if (spec.leading_layers > num_layers) layers.fail("exceeds the number of layers");
  spec.intermediate = dimension(node.required("intermediate"), kDenseWidth);
  return spec;
}

BlockScaledFormat read_weight_format(const YamlNode& node) {
  node.expect_only({"dtype", "scale_dtype", "scale_group"});
  return read_block_scaled_format(node);
}

WeightFormats read_weights(const YamlNode& node) {
  node.expect_only({"routed_experts", "dense", "embedding", "source"});
  WeightFormats formats;
  formats.routed_experts = read_weight_format(node.required("routed_experts"));
  formats.dense = read_weight_format(node.required("dense"));
  formats.embedding = read_weight_format(node.required("embedding"));
  formats.source = node.required("source").as_string();
  return formats;
}

CedSpec read_ced(const YamlNode& node, int64_t num_layers) {
  node.expect_only({"encoder_layers", "decoder_keep_tokens", "source"});
  CedSpec spec;
  const YamlNode encoder = node.required("encoder_layers");
  spec.encoder_layers = encoder.as_positive_int();
  if (spec.encoder_layers >= num_layers) encoder.fail("must be less than the number of layers");
  spec.decoder_keep_tokens = dimension(node.required("decoder_keep_tokens"), kTokensRead);
  return spec;
}

MhcSpec read_mhc(const YamlNode& node) {
  node.expect_only({"streams", "sinkhorn_iters", "single_pass", "projection"});
  MhcSpec spec;
  spec.streams = dimension(node.required("streams"), kSmall);
  spec.sinkhorn_iters = dimension(node.required("sinkhorn_iters"), kSmall);
  spec.single_pass = node.required("single_pass").as_bool();
  spec.projection = read_weight_format(node.required("projection"));
  return spec;
}

EngramSpec read_engram(const YamlNode& node, int64_t num_layers) {
  node.expect_only({"layers", "table_rows", "row_dim", "heads", "max_ngram", "row_cache", "source"});
  EngramSpec spec;
  spec.layers = read_layer_ids(node.required("layers"), num_layers);
  for (const YamlNode& rows : node.required("table_rows").elements()) {
    spec.table_rows.push_back(dimension(rows, kTableRows));
  }
  spec.row_dim = dimension(node.required("row_dim"), kHeadDim);
  spec.heads = dimension(node.required("heads"), kHeads);
  spec.max_ngram = dimension(node.required("max_ngram"), kSmall);
  spec.row_cache = node.required("row_cache").as_string();
  return spec;
}

// The draft's acceptance: per position (`acceptance`), or the mean tokens a
// verify step of `acceptance_length_drafts` drafts yields as an engine
// measured it (`acceptance_length`, 1 + accepted drafts a step), from which the
// per-position acceptance is derived (draft_yield.h); never both, never neither.
SourcedValue read_draft_acceptance(const YamlNode& node, int64_t block_size) {
  const auto per_position = node.optional("acceptance");
  const auto mean_tokens = node.optional("acceptance_length");
  const auto mean_drafts = node.optional("acceptance_length_drafts");
  if (per_position && mean_tokens) {
    mean_tokens->fail(
        "expected acceptance (per position) or acceptance_length (a step's measured mean "
        "yield), not both");
  }
  if (!mean_tokens) {
    if (mean_drafts)
      mean_drafts->fail("a step's drafts for acceptance_length, which the draft does not give");
    const YamlNode acceptance = node.required("acceptance");
    SourcedValue p = read_sourced_value(acceptance);
    if (p.known() && p.value() >= 1.0)
      acceptance.fail(fmt::format("expected an acceptance rate below 1, got {}", p.value()));
    return p;
  }
  const YamlNode drafts_node = node.required("acceptance_length_drafts");
  const int64_t drafts = drafts_node.as_positive_int();
  if (drafts > block_size) {
    drafts_node.fail(
        fmt::format("expected 1..{} drafts a step (the draft's block_size), got {}", block_size, drafts));
  }
  const SourcedValue mean = read_sourced_value(*mean_tokens);
  if (!mean.known()) return mean;
  if (!(mean.value() > 1.0 && mean.value() < static_cast<double>(drafts + 1))) {
    mean_tokens->fail(
        fmt::format("expected a step's mean tokens between 1 and {} (the verifier's token and "
                    "{} drafts), exclusive, got {}",
                    drafts + 1, drafts, mean.value()));
  }
  const Provenance& measured = mean.provenance();
  return SourcedValue(acceptance_for_mean_tokens(mean.value(), drafts),
                      {ProvenanceKind::kDerived,
                       fmt::format("the per-position acceptance p whose step of {} drafts yields {:g} tokens "
                                   "on average, 1 + p + ... + p^{} ({}: {})",
                                   drafts, mean.value(), drafts, measured.kind_name(), measured.note)},
                      mean.where());
}

DraftSpec read_draft(const YamlNode& node, int64_t num_layers) {
  node.expect_only({"kind", "stages", "block_size", "target_layers", "routed_experts", "top_k", "acceptance",
                    "acceptance_length", "acceptance_length_drafts", "source"});
  DraftSpec spec;
  spec.kind = node.required("kind").as_string();
  spec.stages = dimension(node.required("stages"), kSmall);
  spec.block_size = dimension(node.required("block_size"), kSmall);
  if (const auto targets = node.optional("target_layers")) {
    spec.target_layers = read_layer_ids(*targets, num_layers);
  }
  // The draft stages are costed as MoE layers (DSpark's, V3's MTP): their experts and the
  // chance a drafted token is accepted are part of describing them, never defaulted.
  spec.routed_experts = dimension(node.required("routed_experts"), kExperts);
  const YamlNode top_k = node.required("top_k");
  spec.top_k = top_k.as_positive_int();
  if (spec.top_k > spec.routed_experts) {
    top_k.fail(
        fmt::format("expected 1..{} (the draft's routed_experts), got {}", spec.routed_experts, spec.top_k));
  }
  spec.acceptance = read_draft_acceptance(node, spec.block_size);
  return spec;
}

std::map<std::string, double> read_published(const YamlNode& node) {
  std::map<std::string, double> published;
  for (const auto& [key, value] : node.entries()) {
    if (key == "source") continue;
    published[key] = value.as_positive_double();
  }
  return published;
}

void check_cache_references(const YamlNode& root, const ModelSpec& spec) {
  const YamlNode attention = root.required("attention");
  check_cache_reference(attention.required("main_cache"), spec.attention.main_cache, spec.cache_formats);
  if (!spec.attention.window_cache.empty()) {
    check_cache_reference(attention.required("window_cache"), spec.attention.window_cache,
                          spec.cache_formats);
  }
  if (spec.attention.indexer) {
    check_cache_reference(attention.required("indexer").required("key_cache"),
                          spec.attention.indexer->key_cache, spec.cache_formats);
  }
  if (spec.engram) {
    check_cache_reference(root.required("engram").required("row_cache"), spec.engram->row_cache,
                          spec.cache_formats);
  }
}

// The layer plan is derived here once, so that a file with inconsistent
// source lists fails at load time with the field that is wrong.
void check_layer_plan(const YamlNode& root, const ModelSpec& spec) {
  try {
    derive_layer_plan(spec);
  } catch (const LayerPlanError& e) {
    const YamlNode attention = root.required("attention");
    const auto field = attention.optional(e.field());
    throw InputError(field ? field->location() : attention.location(), e.what());
  }
}

}  // namespace

ModelSpec load_model(const YamlNode& root) {
  root.expect_only({"name", "source", "hidden_size", "num_layers", "vocab_size", "max_context",
                    "tied_embeddings", "attention", "moe", "dense_mlp", "weights", "cache_formats", "ced",
                    "mhc", "engram", "draft", "published"});
  ModelSpec spec;
  spec.file = root.file();
  spec.name = root.required("name").as_string();
  spec.source = root.required("source").as_string();
  spec.hidden_size = dimension(root.required("hidden_size"), kWidth);
  spec.num_layers = dimension(root.required("num_layers"), kLayers);
  spec.vocab_size = dimension(root.required("vocab_size"), kVocab);
  spec.max_context = dimension(root.required("max_context"), kContext);
  if (const auto tied = root.optional("tied_embeddings")) spec.tied_embeddings = tied->as_bool();
  spec.attention = read_attention(root.required("attention"), spec.num_layers);
  if (const auto moe = root.optional("moe")) spec.moe = read_moe(*moe);
  if (const auto dense = root.optional("dense_mlp")) {
    spec.dense_mlp = read_dense_mlp(*dense, spec.num_layers);
  }
  if (!spec.moe && spec.dense_mlp.leading_layers != spec.num_layers) {
    root.fail("a model without a moe block needs dense_mlp.leading_layers equal to num_layers");
  }
  spec.weights = read_weights(root.required("weights"));
  const auto dims = cache_dimensions(spec.attention);
  for (const auto& [name, node] : root.required("cache_formats").entries()) {
    spec.cache_formats[name] = read_cache_format(name, node, dims);
  }
  if (const auto ced = root.optional("ced")) spec.ced = read_ced(*ced, spec.num_layers);
  if (const auto mhc = root.optional("mhc")) spec.mhc = read_mhc(*mhc);
  if (const auto engram = root.optional("engram")) {
    spec.engram = read_engram(*engram, spec.num_layers);
  }
  if (const auto draft = root.optional("draft")) spec.draft = read_draft(*draft, spec.num_layers);
  if (const auto published = root.optional("published")) {
    spec.published = read_published(*published);
  }
  check_cache_references(root, spec);
  check_layer_plan(root, spec);
  return spec;
}

ModelSpec load_model_file(const std::string& path) { return load_model(YamlNode::load_file(path)); }

ModelSpec load_model_by_name(const Catalog& catalog, const std::string& name_or_path) {
  ModelSpec spec = load_model_file(catalog.resolve_model(name_or_path));
  spec.file = path_in_data_dir(spec.file, catalog.data_dir());
  return spec;
}

int64_t CompressorSpec::overlap(int64_t ratio) const {
  const auto it = overlap_by_ratio.find(ratio);
  return it == overlap_by_ratio.end() ? 1 : it->second;
}

const CacheEntryFormat& ModelSpec::cache(const std::string& cache_name) const {
  const auto it = cache_formats.find(cache_name);
  if (it == cache_formats.end()) {
    throw std::logic_error("cache format '" + cache_name + "' missing after load of " + file);
  }
  return it->second;
}

}  // namespace v41sim
