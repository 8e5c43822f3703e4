#include "sim/graph/attention_block.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/graph/projection_fusion.h"
#include "sim/graph/residual_mixing.h"
#include "sim/graph/tensor_parallel.h"
#include "sim/graph/visibility.h"

namespace v41sim {
namespace {

// Attention kernels work on tiles of this many queries; in prefill a tile
// reads the keys it needs once (FlashMLA / FlashAttention style).
constexpr double kQueryTile = 64;
// Queries whose candidate-pool blocks one tile of DeepGEMM's
// sparse_mqa_logits merges (layout/sparse_mqa_logits.cuh: kBlockQ = 2).
constexpr double kPoolQueryBlock = 2;

// The inputs the block's projections read (projection_fusion.h): the mixed
// residual stream, and the normalized query latent.
constexpr const char* kBlockInput = "attn_input";
constexpr const char* kQueryLatent = "q_latent";

struct AttentionDims {
  double qk = 0;  // dims of one query-key dot product
  double v = 0;   // dims of one value row
};

// MLA runs "absorbed" in decode (attend over the 576-dim latent), and as
// plain multi-head attention over up-projected keys in prefill.
AttentionDims attention_dims(const LayerContext& c, const SequenceGroup& g) {
  const AttentionSpec& a = c.model.spec.attention;
  if (a.kv_projection == KvProjection::kMla && g.phase == Phase::kDecode) {
    return {static_cast<double>(a.kv_lora_rank + a.rope_dim), static_cast<double>(a.kv_lora_rank)};
  }
  return {static_cast<double>(a.head_dim), static_cast<double>(a.v_head_dim)};
}

// The values of `reads` cache entries, by storage format, for the kernel
// that feeds them to its tensor math.
void add_entry_values(NarrowValues& narrow, const CacheEntryFormat& entry, double reads) {
  for (const CacheEntryPart& part : entry.parts)
    narrow.add(part.format.values, static_cast<double>(part.count) * reads);
}

MathType key_math(const ModelSpec& m, const std::string& cache) {
  const ElementFormat values = m.cache(cache).parts.front().format.values;
  return values == ElementFormat::kFp4E2M1 ? MathType::kFp4 : MathType::kFp8;
}

void add_query_projection(const LayerContext& c, KernelFactory& f) {
  const ModelSpec& m = c.model.spec;
  const AttentionSpec& a = m.attention;
  const double h = static_cast<double>(m.hidden_size);
  const double q_out =
      local_attention_heads(m, c.step) * static_cast<double>(a.head_dim);  // this GPU's heads
  if (a.q_lora_rank > 0) {
    const double rank = static_cast<double>(a.q_lora_rank);
    f.gemm_for_weights("q_down_proj", c.tokens, rank, h, m.weights.dense).input = kBlockInput;
    const double q_up_row_bytes = gemm_row_bytes_for(m.weights.dense);
    f.elementwise("q_norm", c.tokens, rank, c.tokens * rank * (kBf16ActivationBytes + q_up_row_bytes));
    f.gemm_for_weights("q_up_proj", c.tokens, q_out, rank, m.weights.dense).input = kQueryLatent;
  } else {
    f.gemm_for_weights("q_proj", c.tokens, q_out, h, m.weights.dense).input = kBlockInput;
  }
}

// The per-token KV of the layer's own sliding window (V4/V4.1), with RoPE,
// quantization and cache write: for the rows that run the layer.
void add_window_kv(const LayerContext& c, KernelFactory& f) {
  const ModelSpec& m = c.model.spec;
  const AttentionSpec& a = m.attention;
  if (a.kv_projection != KvProjection::kSharedLatent || !c.plan.has_window) return;
  const double h = static_cast<double>(m.hidden_size);
  const double latent = static_cast<double>(a.kv_heads * a.head_dim);
  f.gemm_for_weights("window_kv_proj", c.tokens, latent, h, m.weights.dense).input = kBlockInput;
  const double entry = static_cast<double>(m.cache(a.window_cache).bytes);
  f.elementwise("window_kv_norm_rope_quant_write", c.tokens, latent,
                c.tokens * (latent * kBf16ActivationBytes + entry));
}

// The KV the layer keeps for good, for every new token (kv_tokens): the MLA
// latent (V3) or GQA's K and V, with RoPE, quantization and cache write.
// (V4's compressed entries are add_compressor's.)
void add_global_kv(const LayerContext& c, KernelFactory& f) {
  const ModelSpec& m = c.model.spec;
  const AttentionSpec& a = m.attention;
  if (a.kv_projection == KvProjection::kSharedLatent || !c.plan.owns_kv()) return;
  const double h = static_cast<double>(m.hidden_size);
  const double out = a.kv_projection == KvProjection::kMla
                         ? static_cast<double>(a.kv_lora_rank + a.rope_dim)
                         : static_cast<double>(a.kv_heads * (a.head_dim + a.v_head_dim));
  f.gemm_for_weights("kv_proj", c.kv_tokens, out, h, m.weights.dense).input = kBlockInput;
  const double entry = static_cast<double>(m.cache(a.main_cache).bytes);
  f.elementwise("kv_norm_rope_cache_write", c.kv_tokens, out,
                c.kv_tokens * (out * kBf16ActivationBytes + entry));
}

// Pooling compressor (ratio > 1) or plain projection (ratio 1) into a cache.
void add_compressor(const LayerContext& c, KernelFactory& f, const std::string& what, double dim,
                    const std::string& cache) {
  const ModelSpec& m = c.model.spec;
  const double h = static_cast<double>(m.hidden_size);
  const double ratio = static_cast<double>(c.plan.ratio);
  const double overlap = static_cast<double>(m.attention.compressor.overlap(c.plan.ratio));
  const double out = c.plan.ratio > 1 ? 2.0 * overlap * dim : dim;  // KV and gate when pooling
  f.gemm_for_weights(what + "_compress_proj", c.kv_tokens, out, h, m.weights.dense).input = kBlockInput;
  const double entries = c.kv_tokens / ratio;
  const double entry = static_cast<double>(m.cache(cache).bytes);
  f.elementwise(what + (c.plan.ratio > 1 ? "_pool_rope_quant_write" : "_rope_quant_write"), entries, dim,
                c.kv_tokens * out * kBf16ActivationBytes + entries * entry, c.kv_tokens * out * 4.0);
}

// Lightning indexer, its queries: each row's index query and per-head weights
// (the logits and top-k are add_index_scoring's, the keys add_global_caches').
void add_indexer_queries(const LayerContext& c, KernelFactory& f) {
  const ModelSpec& m = c.model.spec;
  const AttentionSpec& a = m.attention;
  const IndexerSpec& idx = *a.indexer;
  const double h = static_cast<double>(m.hidden_size);
  const double heads = static_cast<double>(idx.heads);
  const double dim = static_cast<double>(idx.head_dim);
  const double q_in = a.q_lora_rank > 0 ? static_cast<double>(a.q_lora_rank) : h;
  f.gemm_for_weights("index_q_proj", c.tokens, heads * dim, q_in, m.weights.dense).input =
      a.q_lora_rank > 0 ? kQueryLatent : kBlockInput;
  f.gemm("index_head_weights", c.tokens, heads, h, m.weights.dense, MathType::kBf16).input = kBlockInput;
}

bool writes_index_keys(const LayerContext& c) { return c.plan.selects_topk() && c.plan.owns_index_keys(); }

// The caches the layer keeps for every new token (kv_tokens), where it owns
// them: its global KV (compressed entries on V4/V4.1) and its index keys.
void add_global_caches(const LayerContext& c, KernelFactory& f) {
  const AttentionSpec& a = c.model.spec.attention;
  add_global_kv(c, f);
  if (c.plan.owns_kv() && a.kv_projection == KvProjection::kSharedLatent) {
    add_compressor(c, f, "kv", static_cast<double>(a.kv_heads * a.head_dim), a.main_cache);
  }
  if (writes_index_keys(c)) {
    add_compressor(c, f, "index_key", static_cast<double>(a.indexer->head_dim), a.indexer->key_cache);
  }
}

// Whether a Reindex layer's logits score its candidate pool alone: as the
// layer plan says, unless the step's engine has no sparse logits kernel and
// scores every visible position, masking the rest after (DeepGEMM's
// sparse_mqa_logits has sm100 and sm120 kernels, none for sm90; vLLM before
// its PR #56254 scored the whole context so, and SGLang's Hopper path selects
// through masks, its PR #39671; our Hopper kernel scores the pool).
bool scores_pool_only(const LayerContext& c) {
  return c.plan.scores_in_candidate_pool && c.step.engine.reindex_scores_pool_only;
}

// Whether a Reindex layer's queries score pools of their own: once there are
// more positions than the pool holds (below that a query's pool is all its
// positions, as a Full layer scores them).
bool scores_own_pools(const LayerContext& c, const SequenceGroup& g) {
  const AttentionSpec& a = c.model.spec.attention;
  return scores_pool_only(c) && a.candidate_pool &&
         visible_at(g.query_end, static_cast<double>(c.plan.ratio), kUncapped) >
             static_cast<double>(a.candidate_pool->positions());
}

// Index keys one group's logits read. A decode sequence's queries (its token
// and the drafts it verifies) share each key block it loads, over the last
// query's range, as DeepGEMM's paged logits kernel takes a sequence's next_n
// queries as one tile of next_n x heads rows (sm90_fp8_paged_mqa_logits; its
// host side takes next_n 1, 2 or 4 on sm90, 4 as two CTAs multicasting the
// keys, so an engine on it verifying 5 drafts would split a sequence's 6
// queries; ours takes up to 8, kernels/indexer/indexer_wgmma_decode_tiles.h:
// assumed, a kernel that shares them all; StepShape's
// draft_queries_share_index_keys false reads them once a query, as SGLang's
// split path calls DeepGEMM with each token a sequence). Prefill tiles share them over
// kQueryTile queries. Where each query scores its own pool (the top blocks of
// its own logits), in decode each gathers its own; in prefill DeepGEMM's
// sparse_mqa_logits merges the pool blocks of kPoolQueryBlock queries (its
// kBlockQ), counted as if their pools coincided (the fewest reads).
double index_key_reads(const LayerContext& c, const SequenceGroup& g, double scored, double visible,
                       bool own_pools) {
  if (g.phase == Phase::kDecode)
    return own_pools || !c.step.engine.draft_queries_share_index_keys ? scored : g.sequences * visible;
  return scored / (own_pools ? kPoolQueryBlock : kQueryTile);
}

// The logits kernel's tiles: all heads of a query in one tile (DeepGEMM's
// mqa_logits), tiles over queries x positions. A decode tile holds one
// sequence's queries (batch: the sequences), or where each query scores its
// own pool one query (batch: the queries), as DeepGEMM's paged kernels split
// their work by sequence, or by query, and position.
KernelShape index_logits_shape(const SequenceGroup& g, int64_t visible, int64_t head_dims, bool own_pools) {
  const auto tokens = static_cast<int64_t>(std::ceil(g.tokens));
  if (g.phase != Phase::kDecode) return {tokens, visible, head_dims, 1};
  if (own_pools) return {1, visible, head_dims, tokens};
  return {static_cast<int64_t>(std::ceil(g.queries_per_sequence())), visible, head_dims,
          static_cast<int64_t>(std::ceil(g.sequences))};
}

// The indexer's logits of every visible (or pooled) position for one group's
// queries, then its top-k.
void add_index_scoring(const LayerContext& c, const SequenceGroup& g, KernelFactory& f) {
  const ModelSpec& m = c.model.spec;
  const AttentionSpec& a = m.attention;
  const IndexerSpec& idx = *a.indexer;
  const double heads = static_cast<double>(idx.heads);
  const double dim = static_cast<double>(idx.head_dim);
  const double ratio = static_cast<double>(c.plan.ratio);
  const double pool = a.candidate_pool ? static_cast<double>(a.candidate_pool->positions()) : kUncapped;
  const bool pool_only = scores_pool_only(c);
  const double cap = pool_only ? pool : kUncapped;
  const double q = g.queries_per_sequence();
  const double scored = g.sequences * sum_visible(q, g.query_end, ratio, cap);  // (query, position) pairs
  const double visible = visible_at(g.query_end, ratio, cap);
  const bool own_pools = scores_own_pools(c, g);
  const double key_reads = index_key_reads(c, g, scored, visible, own_pools);
  const double key_bytes = static_cast<double>(m.cache(idx.key_cache).bytes);
  Kernel& logits = f.push({});
  logits.name = (pool_only ? "indexer_logits_in_pool" : "indexer_logits") + g.name_suffix;
  logits.kernel_class = KernelClass::kIndexer;
  logits.math = key_math(m, idx.key_cache);
  logits.shape = index_logits_shape(g, std::max<int64_t>(1, static_cast<int64_t>(visible)),
                                    static_cast<int64_t>(dim * heads), own_pools);
  logits.flops = 2.0 * heads * dim * scored;
  logits.folded_values = heads * scored;  // each head's score: ReLU, its weight, into the sum
  // The logits go through memory to the top-k pass in both phases: DeepGEMM's
  // fp8_mqa_logits (prefill) and fp8_paged_mqa_logits (decode) return the
  // queries x positions FP32 logits (API reference, v2.2.0), engines run the
  // top-k apart, and so do our kernels. Counted for the visible pairs only:
  // an engine that fills the masked part with -inf (clean_logits) writes more.
  const double logit_bytes = scored * kFp32Bytes;
  logits.hbm_bytes = key_reads * key_bytes + g.tokens * heads * dim + logit_bytes;
  add_entry_values(logits.narrow, m.cache(idx.key_cache), key_reads);

  if (c.plan.builds_candidate_pool && a.candidate_pool && visible_at(g.query_end, ratio, kUncapped) > pool) {
    // The logits pass also writes each block's max (kernels/indexer: a shuffle
    // over 8 lanes), so the pool's top-k reads block maxima, not the logits.
    const double block_size = static_cast<double>(a.candidate_pool->block_size);
    const double block_max_bytes = scored / block_size * kFp32Bytes;
    logits.hbm_bytes += block_max_bytes;
    Kernel& blocks = f.push({});
    blocks.name = "candidate_pool_block_max_topk" + g.name_suffix;
    blocks.kernel_class = KernelClass::kTopK;
    blocks.math = MathType::kFp32;
    blocks.shape = {static_cast<int64_t>(std::ceil(g.tokens)),
                    static_cast<int64_t>(visible_at(g.query_end, ratio, kUncapped) / block_size), 1, 1};
    blocks.flops = scored / block_size * 2.0;
    blocks.hbm_bytes =
        block_max_bytes + g.tokens * static_cast<double>(a.candidate_pool->top_blocks) * kFp32Bytes;
  }
  f.topk("topk_select" + g.name_suffix, static_cast<int64_t>(std::ceil(g.tokens)), logits.shape.n, scored,
         g.tokens * static_cast<double>(idx.topk));
}

// One group's attention over the selected (or all) compressed entries plus the window.
void add_attention_kernel(const LayerContext& c, const SequenceGroup& g, KernelFactory& f) {
  const ModelSpec& m = c.model.spec;
  const AttentionSpec& a = m.attention;
  const AttentionDims dims = attention_dims(c, g);
  // This GPU's heads, padded to the latent kernels' tile (tensor_parallel.h);
  // MLA prefill attends over up-projected per-head keys, no padding.
  const bool up_projected = a.kv_projection == KvProjection::kMla && g.phase == Phase::kPrefill;
  const double heads = up_projected ? local_attention_heads(m, c.step) : attention_kernel_heads(m, c.step);
  const double q = g.queries_per_sequence();
  double pairs = 0;        // (query, key) pairs, all sequences
  double key_bytes = 0;    // HBM bytes of keys read
  double reuse_bytes = 0;  // of those, re-reads another layer just made
  NarrowValues narrow;     // values of the entries read, by storage format
  if (c.plan.kv_source) {
    const double ratio = static_cast<double>(c.plan.ratio);
    const bool sparse = c.plan.topk_source.has_value();
    const double cap = sparse ? static_cast<double>(a.indexer->topk) : kUncapped;
    const double selected = g.sequences * sum_visible(q, g.query_end, ratio, cap);
    const double entry = static_cast<double>(m.cache(a.main_cache).bytes);
    pairs += selected;
    // Decode: a sparse layer's queries each gather their own entries (FlashMLA's
    // sparse decode takes an index list a query token); a dense layer's keys
    // are read once a sequence, those its last query sees, for FlashMLA packs
    // a sequence's query tokens with its heads into a tile's rows (users' runs
    // on H100, validation/published/flashmla_users_hopper.yaml: two query
    // tokens a sequence in 1.01-1.02x the time of one, memory-bound).
    const double decode_reads = sparse ? selected : g.sequences * visible_at(g.query_end, ratio, cap);
    const double main_reads =
        g.phase == Phase::kDecode
            ? decode_reads
            : std::min(selected, g.sequences * sum_visible(q, g.query_end, ratio, kUncapped) / kQueryTile);
    const double main_bytes = main_reads * entry;
    key_bytes += main_bytes;
    add_entry_values(narrow, m.cache(a.main_cache), main_reads);
    // A Reuse layer gathers exactly the entries its source layer selected and
    // gathered moments before (a Reindex layer selects its own).
    if (c.plan.role == LayerRole::kReuse && c.plan.topk_source) reuse_bytes = main_bytes;
  }
  if (c.plan.has_window) {
    const double window = static_cast<double>(a.sliding_window);
    const double selected = g.sequences * sum_visible(q, g.query_end, 1.0, window);
    const double entry = static_cast<double>(m.cache(a.window_cache).bytes);
    pairs += selected;
    const double window_reads = g.phase == Phase::kDecode ? selected : g.tokens * (1.0 + window / kQueryTile);
    key_bytes += window_reads * entry;
    add_entry_values(narrow, m.cache(a.window_cache), window_reads);
  }
  Kernel& attn = f.push({});
  attn.name = (c.plan.topk_source ? "sparse_attention" : "attention") + g.name_suffix;
  attn.kernel_class = KernelClass::kAttention;
  attn.math = MathType::kBf16;
  // Tile rows are (query, head) pairs, as FlashMLA packs a query's heads into
  // one tile. A decode tile holds one sequence's rows (sequences attend to
  // keys of their own), so decode counts its rows per sequence, batch = sequences.
  const bool per_sequence = g.phase == Phase::kDecode;
  const double problems = per_sequence ? g.sequences : 1.0;
  attn.shape = {static_cast<int64_t>(std::ceil(g.tokens * heads / problems)),
                std::max<int64_t>(1, static_cast<int64_t>(pairs / g.tokens)),
                static_cast<int64_t>(dims.qk + dims.v), static_cast<int64_t>(problems)};
  attn.flops = 2.0 * heads * pairs * (dims.qk + dims.v);
  attn.hbm_bytes = key_bytes + g.tokens * heads * (dims.qk + dims.v) * kBf16ActivationBytes;
  attn.epilogue_bytes = g.tokens * heads * (dims.qk + dims.v) * kBf16ActivationBytes;  // Q in, O out
  attn.l2_reuse_bytes = reuse_bytes;
  // MLA prefill attends over up-projected BF16 keys (kv_up_proj below), not the cache.
  if (!up_projected) attn.narrow = narrow;

  if (up_projected) {
    // Prefill up-projects every visible latent to per-head keys and values.
    const double rank = static_cast<double>(a.kv_lora_rank);
    const double out = heads * static_cast<double>(a.head_dim - a.rope_dim + a.v_head_dim);
    f.gemm_for_weights("kv_up_proj" + g.name_suffix, g.sequences * g.query_end, out, rank, m.weights.dense);
  }
}

void add_output_projection(const LayerContext& c, KernelFactory& f) {
  const ModelSpec& m = c.model.spec;
  const AttentionSpec& a = m.attention;
  const double h = static_cast<double>(m.hidden_size);
  const double tp = static_cast<double>(c.step.attention_tp);
  const double attn_out = local_attention_heads(m, c.step) * static_cast<double>(a.v_head_dim);
  if (a.output_groups > 0) {
    const double groups =
        static_cast<double>(a.output_groups) / tp;  // this GPU's: a group's heads stay on one
    const double rank = static_cast<double>(a.output_lora_rank);
    f.gemm_for_weights("out_group_proj", c.tokens, rank, attn_out / groups, m.weights.dense, groups);
    f.gemm_for_weights("out_proj", c.tokens, h, groups * rank, m.weights.dense);
  } else {
    f.gemm_for_weights("out_proj", c.tokens, h, attn_out, m.weights.dense);
  }
  // Summed over the rank's GPUs; scattered too where they then take slices
  // of the tokens to the experts (tensor_parallel.h).
  if (scatters_tokens_to_experts(c.step)) {
    f.push(make_reduce_scatter("attn_tp_reduce_scatter", c.tokens, m.hidden_size, c.step.attention_tp));
  } else if (c.step.attention_tp > 1) {
    f.push(make_all_reduce("attn_tp_all_reduce", c.tokens, m.hidden_size, c.step.attention_tp));
  }
}

}  // namespace

// A layer no row runs (CED: a decoder layer in a chunk that does not end its
// prompt) still writes its global caches for the chunk's tokens: the prompt's
// last chunk attends to them.
void add_attention_block(const LayerContext& c, KernelFactory& f) {
  const bool runs = c.tokens > 0;
  if (runs) add_residual_mixing(c, f, "attn");
  // Rows that only write the layer's caches (CED: a decoder layer's prompt
  // rows before the replayed tail) still need its block input.
  if (c.kv_tokens > c.tokens && (c.plan.owns_kv() || writes_index_keys(c)))
    add_block_input_only(c, f, c.kv_tokens - c.tokens);
  const std::size_t first = f.kernels().size();
  if (runs) {
    add_query_projection(c, f);
    add_window_kv(c, f);
  }
  add_global_caches(c, f);
  if (runs) {
    if (c.plan.selects_topk()) add_indexer_queries(c, f);
    for (const SequenceGroup& g : c.groups) {
      if (c.plan.selects_topk()) add_index_scoring(c, g, f);
      add_attention_kernel(c, g, f);
    }
    add_output_projection(c, f);
  }
  if (c.step.fuse_input_projections) fuse_same_input_gemms(f.kernels(), first);
}

}  // namespace v41sim
