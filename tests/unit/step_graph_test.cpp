// The kernel graph: which kernels each layer mode runs, and the work they do.
#include "sim/graph/step_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "sim/common/input_error.h"
#include "sim/graph/expert_load.h"
#include "tests/step_test_support.h"

namespace v41sim {
namespace {

using testing::analyze;
using testing::shape;

std::set<std::string> kernel_names(const LayerKernels& layer) {
  std::set<std::string> names;
  for (const Kernel& k : layer.kernels()) names.insert(k.name);
  return names;
}

double flops_of(const StepGraph& g) {
  double total = 0;
  for (const LayerKernels& l : g.layers) {
    for (const Kernel& k : l.kernels()) total += k.flops;
  }
  return total;
}

const Kernel* find_kernel(const LayerKernels& layer, const std::string& name) {
  for (const Kernel& k : layer.kernels()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

// What the tensor math takes from narrow storage, per read: V4.1 decode at
// 64K gathers top-512 compressed entries (512 FP4 values each) and the
// 128-entry FP8 window (512 values each) per token; its indexer reads every
// visible index key (128 FP4 values). V3.2 gathers top-2048 FP8 entries
// (512 FP8 values + 64 BF16 RoPE dims); V3's MLA prefill attends over
// up-projected BF16 keys and widens nothing.
TEST(StepGraph, NarrowValuesAreCountedPerRead) {
  const int64_t batch = 4;
  const StepGraph v41 = build_step_graph(analyze("deepseek_v4_1_flash"), shape(Phase::kDecode, batch, 65536));
  const Kernel* attention = find_kernel(v41.layers[2], "sparse_attention");
  ASSERT_NE(attention, nullptr);
  EXPECT_DOUBLE_EQ(attention->narrow.fp4, batch * 512.0 * 512.0);
  EXPECT_DOUBLE_EQ(attention->narrow.fp8, batch * 128.0 * 512.0);
  const Kernel* logits = find_kernel(v41.layers[2], "indexer_logits");
  ASSERT_NE(logits, nullptr);
  EXPECT_NEAR(logits->narrow.fp4, batch * (65536.0 / 2.0) * 128.0, batch * 128.0);  // within one entry
  EXPECT_DOUBLE_EQ(logits->narrow.fp8, 0.0);

  const StepGraph v32 = build_step_graph(analyze("deepseek_v3_2"), shape(Phase::kDecode, batch, 65536));
  const Kernel* v32_attention = find_kernel(v32.layers[10], "sparse_attention");
  ASSERT_NE(v32_attention, nullptr);
  EXPECT_DOUBLE_EQ(v32_attention->narrow.fp8, batch * 2048.0 * 512.0);
  EXPECT_DOUBLE_EQ(v32_attention->narrow.fp4, 0.0);

  const StepGraph v3 = build_step_graph(analyze("deepseek_v3"), shape(Phase::kPrefill, 1, 4096));
  const Kernel* prefill = find_kernel(v3.layers[10], "attention");
  ASSERT_NE(prefill, nullptr);
  EXPECT_EQ(prefill->narrow, NarrowValues{});
}

// The indexer's FP32 logits go through memory to its top-k in both phases
// (DeepGEMM's fp8_mqa_logits and fp8_paged_mqa_logits return them): the
// logits kernel writes 4 bytes a scored (query, position) pair and the top-k
// reads them, besides writing its k positions a query.
TEST(StepGraph, TheIndexerLogitsGoThroughMemoryToTheTopK) {
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  for (const Phase phase : {Phase::kPrefill, Phase::kDecode}) {
    const StepGraph g = build_step_graph(v41, shape(phase, phase == Phase::kDecode ? 4 : 1, 65536));
    const LayerKernels& layer = g.layers[2];
    const Kernel* logits = find_kernel(layer, "indexer_logits");
    const Kernel* topk = find_kernel(layer, "topk_select");
    ASSERT_NE(logits, nullptr);
    ASSERT_NE(topk, nullptr);
    const IndexerSpec& idx = *v41.spec.attention.indexer;
    const double scored = logits->flops / (2.0 * static_cast<double>(idx.heads * idx.head_dim));
    const double written = topk->hbm_bytes - layer.tokens * static_cast<double>(idx.topk) * 4.0;
    EXPECT_NEAR(written, scored * 4.0, 1e-9 * written) << (phase == Phase::kDecode ? "decode" : "prefill");
    EXPECT_GT(logits->hbm_bytes, scored * 4.0);
    // Each scored pair's heads are folded into its logit on the CUDA cores.
    EXPECT_NEAR(logits->folded_values, scored * static_cast<double>(idx.heads), 1e-9 * logits->folded_values);
    EXPECT_DOUBLE_EQ(topk->folded_values, 0.0);
  }
}

// A decode sequence's queries, its token and the drafts it verifies, score
// the same index keys: the logits kernel loads each key once for all of them
// (DeepGEMM's paged logits take a sequence's next_n queries as one tile), so
// verifying drafts multiplies the indexer's math and logits, not its key reads.
// In the candidate pool each query gathers its own pool's keys (in decode;
// a prompt's queries two at a time).
TEST(StepGraph, IndexKeyReadsAreSharedAsTheKernelsShareThem) {
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  const double batch = 4;
  const double context = 131072;
  auto logits_of = [&](int64_t queries, int layer, const char* name, double positions = 131072) {
    StepShape s = shape(Phase::kDecode, static_cast<int64_t>(batch), static_cast<int64_t>(positions));
    s.decode_tokens_per_sequence = queries;
    const StepGraph g = build_step_graph(v41, s);
    const Kernel* k = find_kernel(g.layers[static_cast<size_t>(layer)], name);
    EXPECT_NE(k, nullptr) << name;
    return k ? *k : Kernel{};
  };
  const IndexerSpec& idx = *v41.spec.attention.indexer;
  const double key_bytes = static_cast<double>(v41.spec.cache(idx.key_cache).bytes);
  const double values_per_key = static_cast<double>(idx.head_dim);
  const Kernel pool_one = logits_of(1, 24, "indexer_logits_in_pool");
  const Kernel pool_six = logits_of(6, 24, "indexer_logits_in_pool");
  EXPECT_DOUBLE_EQ(pool_six.narrow.fp4, 6.0 * pool_one.narrow.fp4);
  EXPECT_DOUBLE_EQ(pool_one.narrow.fp4, batch * 16384.0 * values_per_key);
  EXPECT_EQ(pool_six.shape.batch, 6 * static_cast<int64_t>(batch));  // a query's own tiles
  // Below the pool's 16,384 positions a query's pool is all its positions: a
  // sequence's queries share them as a Full layer's do.
  const Kernel small_one = logits_of(1, 24, "indexer_logits_in_pool", 8192);
  const Kernel small_six = logits_of(6, 24, "indexer_logits_in_pool", 8192);
  EXPECT_NEAR(small_six.narrow.fp4, small_one.narrow.fp4, values_per_key * batch);
  EXPECT_NEAR(small_six.flops / small_one.flops, 6.0, 1e-2);
  // A prompt's queries read the keys of their pools two at a time (DeepGEMM's
  // sparse_mqa_logits merges two queries' pool blocks), whose pools are taken
  // as one: half a read a scored pair.
  const StepGraph prefill = build_step_graph(v41, shape(Phase::kPrefill, 1, static_cast<int64_t>(context)));
  const Kernel* pool_prefill = find_kernel(prefill.layers[24], "indexer_logits_in_pool");
  ASSERT_NE(pool_prefill, nullptr);
  const double pairs = pool_prefill->flops / (2.0 * static_cast<double>(idx.heads) * values_per_key);
  EXPECT_NEAR(pool_prefill->narrow.fp4, pairs / 2.0 * values_per_key, 1e-9 * pairs * values_per_key);
  for (const auto& [layer, name, keys] :
       {std::tuple{2, "indexer_logits", context / 2.0}, std::tuple{20, "indexer_logits", context}}) {
    const Kernel one = logits_of(1, layer, name);
    const Kernel six = logits_of(6, layer, name);
    EXPECT_NEAR(six.flops / one.flops, 6.0, 1e-3) << name << " at layer " << layer;
    EXPECT_EQ(six.shape.batch, static_cast<int64_t>(batch)) << name;  // a sequence's queries in its tiles
    EXPECT_EQ(six.shape.m, 6) << name;
    EXPECT_NEAR(six.narrow.fp4, batch * keys * values_per_key, values_per_key * batch) << name;
    EXPECT_NEAR(six.narrow.fp4, one.narrow.fp4, values_per_key * batch) << name;
    EXPECT_GT(one.hbm_bytes, batch * keys * key_bytes) << name;
    // The five more queries a sequence add their logits (4 bytes a pair; an
    // eighth more where the pass writes block maxima) and their query vectors,
    // and no key bytes: a key's 68 bytes a query would be some 15 times that.
    const double pairs_added =
        (six.flops - one.flops) / (2.0 * static_cast<double>(idx.heads) * values_per_key);
    const double queries_added = 5.0 * batch * static_cast<double>(idx.heads) * values_per_key;
    EXPECT_LE(six.hbm_bytes - one.hbm_bytes, pairs_added * 4.0 * (1.0 + 1.0 / 8.0) + queries_added) << name;
    EXPECT_GE(six.hbm_bytes - one.hbm_bytes, pairs_added * 4.0) << name;
  }
}

// An engine with no sparse logits kernel (StepShape::reindex_scores_pool_only
// false) scores every visible position in a Reindex layer, as layer 20 does,
// and masks the rest: the pool's 16,384 positions become the whole context,
// and a sequence's queries share the key reads again.
TEST(StepGraph, AReindexLayerWithoutASparseKernelScoresEveryPosition) {
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  StepShape s = shape(Phase::kDecode, 4, 131072);
  s.decode_tokens_per_sequence = 6;
  const StepGraph pool = build_step_graph(v41, s);
  s.engine.reindex_scores_pool_only = false;
  const StepGraph every = build_step_graph(v41, s);
  const Kernel* pooled = find_kernel(pool.layers[24], "indexer_logits_in_pool");
  const Kernel* all = find_kernel(every.layers[24], "indexer_logits");
  const Kernel* layer20 = find_kernel(every.layers[20], "indexer_logits");
  ASSERT_NE(pooled, nullptr);
  ASSERT_NE(all, nullptr);
  ASSERT_NE(layer20, nullptr);
  EXPECT_EQ(find_kernel(every.layers[24], "indexer_logits_in_pool"), nullptr);
  EXPECT_NEAR(all->flops / pooled->flops, 131072.0 / 16384.0, 1e-3);
  EXPECT_DOUBLE_EQ(all->flops, layer20->flops);
  EXPECT_DOUBLE_EQ(all->narrow.fp4, layer20->narrow.fp4);  // keys once a sequence, as layer 20 reads them
  const Kernel* topk = find_kernel(every.layers[24], "topk_select");
  ASSERT_NE(topk, nullptr);
  EXPECT_EQ(topk->shape.n, 131072);
}

// An engine that runs V4.1's FP4 experts as W4A16 (StepShape::
// experts_bf16_math, Marlin's kernels) multiplies BF16 activations on BF16
// tensor cores: the expert GEMMs take BF16 math and two bytes a value of
// their rows, the dispatch carries BF16 (twice FP8's bytes), the weights read
// and widened are the same, on Marlin's weight-only tiles (Tiling::Rule::
// kWeightOnly); on Hopper the step is slower. The shared expert and the
// other GEMMs keep FP8 and their class's tiles.
TEST(StepGraph, W4a16ExpertsTakeBf16MathAndBf16Dispatch) {
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  StepShape s = shape(Phase::kDecode, 32, 131072);
  const StepGraph w4a8 = build_step_graph(v41, s);
  s.engine.experts_bf16_math = true;
  const StepGraph w4a16 = build_step_graph(v41, s);
  const int64_t layer = v41.spec.dense_mlp.leading_layers;
  const auto at = [layer](const StepGraph& g, const char* name) {
    const Kernel* k = find_kernel(g.layers[static_cast<std::size_t>(layer)], name);
    EXPECT_NE(k, nullptr) << name;
    return k != nullptr ? *k : Kernel{};
  };
  for (const char* name : {"experts_gate_up", "experts_down"}) {
    const Kernel fp8 = at(w4a8, name), bf16 = at(w4a16, name);
    EXPECT_EQ(fp8.math, MathType::kFp8) << name;
    EXPECT_EQ(bf16.math, MathType::kBf16) << name;
    EXPECT_DOUBLE_EQ(bf16.flops, fp8.flops) << name;
    EXPECT_DOUBLE_EQ(bf16.narrow.fp4, fp8.narrow.fp4) << name;
    EXPECT_DOUBLE_EQ(bf16.operands.row_bytes, 2.0 * fp8.operands.row_bytes) << name;
    EXPECT_EQ(fp8.tiling.rule, Tiling::Rule::kClass) << name;
    EXPECT_EQ(bf16.tiling.rule, Tiling::Rule::kWeightOnly) << name;
  }
  EXPECT_EQ(at(w4a16, "shared_gate_up").tiling.rule, Tiling::Rule::kClass);
  EXPECT_DOUBLE_EQ(at(w4a16, "ep_dispatch").link_bytes, 2.0 * at(w4a8, "ep_dispatch").link_bytes);
  EXPECT_DOUBLE_EQ(at(w4a16, "ep_combine").link_bytes, at(w4a8, "ep_combine").link_bytes);
  EXPECT_EQ(at(w4a16, "shared_gate_up").math, MathType::kFp8);
  const testing::GpuUnderTest h200("h200");
  EXPECT_GT(time_step(w4a16, h200.cost).total_us, 1.05 * time_step(w4a8, h200.cost).total_us);
}

TEST(StepGraph, ReuseLayersSkipCompressorAndIndexer) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  StepShape s = shape(Phase::kDecode, 4, 65536);
  s.fuse_input_projections = false;  // each projection under its own name
  const StepGraph g = build_step_graph(m, s);
  const auto full = kernel_names(g.layers[20]);
  const auto reindex = kernel_names(g.layers[24]);
  const auto reuse = kernel_names(g.layers[25]);
  EXPECT_TRUE(full.count("kv_compress_proj") && full.count("index_key_compress_proj") &&
              full.count("indexer_logits"));
  EXPECT_FALSE(reindex.count("kv_compress_proj") || reindex.count("index_key_compress_proj"));
  EXPECT_TRUE(reindex.count("index_q_proj") && reindex.count("indexer_logits_in_pool"));
  for (const char* absent : {"kv_compress_proj", "index_q_proj", "indexer_logits", "topk_select"}) {
    EXPECT_FALSE(reuse.count(absent)) << absent;
  }
  EXPECT_TRUE(reuse.count("sparse_attention"));
}

// A decode attention tile holds one sequence's (query, head) rows: sequences
// attend to keys of their own, so 16 heads (V3 at TP 8) fill a quarter of a
// 64-row tile rather than four sequences sharing one.
TEST(StepGraph, DecodeAttentionTilesHoldOneSequence) {
  ModelSpec spec = analyze("deepseek_v3").spec;
  spec.attention.num_heads = 16;
  const StepGraph g = build_step_graph(analyze_model(spec), shape(Phase::kDecode, 128, 8192));
  const Kernel* attention = find_kernel(g.layers[10], "attention");
  ASSERT_NE(attention, nullptr);
  EXPECT_EQ(attention->shape.batch, 128);
  EXPECT_EQ(attention->shape.m, 16);
  const StepGraph prefill = build_step_graph(analyze_model(spec), shape(Phase::kPrefill, 1, 4096));
  EXPECT_EQ(find_kernel(prefill.layers[10], "attention")->shape.batch, 1);  // one prompt's queries share keys
}

// A decode sequence's query tokens (a token and its drafts) read a dense
// layer's keys once between them, as FlashMLA packs them into a tile's rows,
// and each gathers its own entries in a sparse layer: two query tokens double
// the FLOPs of both, the key bytes of the sparse one only.
TEST(StepGraph, DecodeQueriesShareDenseKeysAndGatherTheirOwnSparseEntries) {
  auto attention_work = [](const std::string& model, int64_t context, int64_t queries,
                           const std::string& name) {
    ModelSpec spec = analyze(model).spec;
    spec.attention.num_heads = 16;
    StepShape s = shape(Phase::kDecode, 128, context);
    s.include_draft = false;
    s.decode_tokens_per_sequence = queries;
    const StepGraph g = build_step_graph(analyze_model(spec), s);
    const Kernel* k = find_kernel(g.layers[10], name);
    EXPECT_NE(k, nullptr) << model << " " << name;
    return k ? std::make_pair(k->flops, k->hbm_bytes - k->epilogue_bytes) : std::make_pair(0.0, 0.0);
  };
  const auto dense_one = attention_work("deepseek_v3", 8192, 1, "attention");
  const auto dense_two = attention_work("deepseek_v3", 8192, 2, "attention");
  EXPECT_NEAR(dense_two.first / dense_one.first, 2.0, 1e-3);
  EXPECT_NEAR(dense_two.second / dense_one.second, 1.0, 1e-3);
  const auto sparse_one = attention_work("deepseek_v3_2", 32768, 1, "sparse_attention");
  const auto sparse_two = attention_work("deepseek_v3_2", 32768, 2, "sparse_attention");
  EXPECT_NEAR(sparse_two.first / sparse_one.first, 2.0, 1e-3);
  EXPECT_NEAR(sparse_two.second / sparse_one.second, 2.0, 1e-3);
}

// Projections of one input run as one GEMM: the same FLOPs and weights, the
// input read once, fewer kernels; projections of other inputs or other row
// counts (CED's layer 20 writes KV for every prompt token) stay apart.
TEST(StepGraph, SameInputProjectionsRunAsOneGemm) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  StepShape s = shape(Phase::kDecode, 32, 65536);
  const StepGraph fused = build_step_graph(m, s);
  s.fuse_input_projections = false;
  const StepGraph separate = build_step_graph(m, s);
  const LayerKernels& full = fused.layers[20];
  const Kernel* input = find_kernel(full, "q_down+window_kv+kv_compress+index_key_compress_proj");
  ASSERT_NE(input, nullptr);
  const char* members[] = {"q_down_proj", "window_kv_proj", "kv_compress_proj", "index_key_compress_proj"};
  double n = 0, flops = 0, bytes = 0;
  for (const char* name : members) {
    const Kernel* k = find_kernel(separate.layers[20], name);
    ASSERT_NE(k, nullptr) << name;
    EXPECT_EQ(find_kernel(full, name), nullptr) << name;
    n += static_cast<double>(k->shape.n);
    flops += k->flops;
    bytes += k->hbm_bytes;
  }
  const double input_bytes = static_cast<double>(input->shape.m * input->shape.k) * input->operands.row_bytes;
  EXPECT_DOUBLE_EQ(static_cast<double>(input->shape.n), n);
  EXPECT_DOUBLE_EQ(input->flops, flops);
  EXPECT_DOUBLE_EQ(input->hbm_bytes, bytes - 3.0 * input_bytes);  // read once, not four times
  EXPECT_NE(find_kernel(full, "q_up+index_q_proj"), nullptr);     // both read the query latent
  EXPECT_NE(find_kernel(full, "index_head_weights"), nullptr);    // BF16: another GEMM
  EXPECT_EQ(flops_of(fused), flops_of(separate));
  EXPECT_LT(fused.layers[20].kernels().size(), separate.layers[20].kernels().size());
  // V3's fused q_a + kv_a is the 2112 x 7168 GEMM of DeepGEMM's published table.
  const StepGraph v3 = build_step_graph(analyze("deepseek_v3"), shape(Phase::kDecode, 64, 4096));
  const Kernel* q_kv = find_kernel(v3.layers[5], "q_down+kv_proj");
  ASSERT_NE(q_kv, nullptr);
  EXPECT_EQ(q_kv->shape.n, 2112);
  EXPECT_EQ(q_kv->shape.k, 7168);
  // CED prefill: layer 20 compresses every prompt token but projects queries for the tail.
  const StepGraph prefill = build_step_graph(m, shape(Phase::kPrefill, 2, 100000));
  EXPECT_NE(find_kernel(prefill.layers[20], "kv_compress+index_key_compress_proj"), nullptr);
  EXPECT_NE(find_kernel(prefill.layers[20], "q_down+window_kv_proj"), nullptr);
}

// Ratio of V4.1's prefill FLOPs to the same model run without CED (all 40
// layers on every prompt token). The decoder's 20 layers still produce layer
// 20's KV and index keys for every token, and the decoder tail runs on 140
// tokens, so the ratio sits a little above one half.
TEST(StepGraph, CedHalvesPrefillWork) {
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  ModelSpec without = v41.spec;
  without.ced.reset();
  const ModelAnalysis all_layers = analyze_model(without);
  const StepShape s = shape(Phase::kPrefill, 1, 32768);
  const double ratio = flops_of(build_step_graph(v41, s)) / flops_of(build_step_graph(all_layers, s));
  EXPECT_GT(ratio, 0.45);
  EXPECT_LT(ratio, 0.56);
  // Decode is unchanged by CED.
  const StepShape d = shape(Phase::kDecode, 8, 32768);
  EXPECT_DOUBLE_EQ(flops_of(build_step_graph(v41, d)), flops_of(build_step_graph(all_layers, d)));
}

// A prefill step in which the other ranks send the experts fewer tokens than
// this rank runs (one rank's prompt among ranks with none): the routed
// experts' rows follow the group's mean, while the router, the shared experts,
// attention and this rank's own all-to-all keep its own tokens (the busiest
// rank's chance share of the fewer routed copies is a little larger).
TEST(StepGraph, RoutedExpertsTakeTheGroupsTokens) {
  const ModelAnalysis v41 = analyze("deepseek_v4_1_flash");
  StepShape alone = shape(Phase::kPrefill, 1, 16384);
  const StepShape every_rank = alone;
  alone.expert_token_share = 1.0 / 8;
  const StepGraph a = build_step_graph(v41, alone);
  const StepGraph e = build_step_graph(v41, every_rank);
  // A kernel of layer 10 in both graphs (alone, every rank); both must exist.
  const auto both = [&a, &e](const char* name) {
    const Kernel* ka = find_kernel(a.layers[10], name);
    const Kernel* ke = find_kernel(e.layers[10], name);
    EXPECT_NE(ka, nullptr) << name;
    EXPECT_NE(ke, nullptr) << name;
    return std::pair{ka, ke};
  };
  const auto [experts_alone, experts_every] = both("experts_gate_up");
  ASSERT_TRUE(experts_alone && experts_every);
  EXPECT_LT(experts_alone->flops, 0.2 * experts_every->flops);
  EXPECT_GT(experts_alone->flops, 0.1 * experts_every->flops);
  for (const char* name : {"router", "sparse_attention", "ep_dispatch", "ep_combine"}) {
    const auto [ka, ke] = both(name);
    ASSERT_TRUE(ka && ke) << name;
    EXPECT_DOUBLE_EQ(ka->flops, ke->flops) << name;
    if (std::string_view(name).starts_with("ep_")) {  // the busiest rank's chance share, a little larger
      EXPECT_GE(ka->hbm_bytes, ke->hbm_bytes) << name;
      EXPECT_LT(ka->hbm_bytes, 1.05 * ke->hbm_bytes) << name;
    } else {
      EXPECT_DOUBLE_EQ(ka->hbm_bytes, ke->hbm_bytes) << name;
    }
  }
  // Only the routed experts (and their activation) differ.
  EXPECT_LT(flops_of(a), flops_of(e));
}

TEST(StepGraph, ReindexIndexerIsFlatPastThePoolAndFullIsLinear) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  auto logits = [&](int64_t context, int64_t layer, const char* name) {
    const StepGraph g = build_step_graph(m, shape(Phase::kDecode, 1, context));
    return find_kernel(g.layers[static_cast<std::size_t>(layer)], name)->flops;
  };
  // Layer 20 has ratio 1: the pool (16,384 positions) engages past 16,384 tokens.
  EXPECT_DOUBLE_EQ(logits(65536, 24, "indexer_logits_in_pool"),
                   logits(1048576, 24, "indexer_logits_in_pool"));
  EXPECT_LT(logits(8192, 24, "indexer_logits_in_pool"), logits(65536, 24, "indexer_logits_in_pool"));
  EXPECT_NEAR(logits(1048576, 20, "indexer_logits") / logits(524288, 20, "indexer_logits"), 2.0, 0.01);
  // The pool is built only once there is something to prune.
  const StepGraph short_context = build_step_graph(m, shape(Phase::kDecode, 1, 8192));
  const StepGraph long_context = build_step_graph(m, shape(Phase::kDecode, 1, 65536));
  EXPECT_EQ(find_kernel(short_context.layers[20], "candidate_pool_block_max_topk"), nullptr);
  EXPECT_NE(find_kernel(long_context.layers[20], "candidate_pool_block_max_topk"), nullptr);
}

TEST(StepGraph, CedPrefillRunsTheDecoderOnTheKeptTail) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  const StepGraph g = build_step_graph(m, shape(Phase::kPrefill, 2, 100000));
  EXPECT_DOUBLE_EQ(g.layers[19].tokens, 200000);
  EXPECT_DOUBLE_EQ(g.layers[21].tokens, 280);
  // Layer 20 still writes global KV for every prompt token.
  const Kernel* compress = find_kernel(g.layers[20], "kv_compress+index_key_compress_proj");
  ASSERT_NE(compress, nullptr);
  EXPECT_EQ(compress->shape.m, 200000);
}

// A chunk that does not end its prompt runs the encoder on its tokens and
// writes layer 20's global KV and index keys for them, but no decoder row
// and no sampling: those wait for the prompt's last chunk.
TEST(StepGraph, CedRunsTheDecoderOnlyInAPromptsLastChunk) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  StepShape s = shape(Phase::kPrefill, 2, 200000);
  s.new_tokens = 16384;
  s.continuing = 1;
  const StepGraph one_ends = build_step_graph(m, s);
  ASSERT_EQ(one_ends.layers.size(), static_cast<std::size_t>(m.spec.num_layers + 1));
  EXPECT_DOUBLE_EQ(one_ends.layers[19].tokens, 2 * 16384);
  EXPECT_DOUBLE_EQ(one_ends.layers[20].tokens, 140);
  EXPECT_DOUBLE_EQ(one_ends.layers[39].tokens, 140);
  EXPECT_EQ(one_ends.layers.back().mode, "Head");
  EXPECT_DOUBLE_EQ(one_ends.layers.back().tokens, 1);
  const Kernel* writes = find_kernel(one_ends.layers[20], "kv_compress+index_key_compress_proj");
  ASSERT_NE(writes, nullptr);
  EXPECT_EQ(writes->shape.m, 2 * 16384);

  s.continuing = 2;
  const StepGraph none_ends = build_step_graph(m, s);
  // Layers 0-19, and layer 20's cache writes alone; no decoder rows, no head.
  ASSERT_EQ(none_ends.layers.size(), 21u);
  const LayerKernels& layer20 = none_ends.layers[20];
  EXPECT_EQ(layer20.layer, 20);
  EXPECT_DOUBLE_EQ(layer20.tokens, 0);
  // The rows' block input (the residual streams mixed and normed), then the projections and writes.
  EXPECT_EQ(kernel_names(layer20),
            (std::set<std::string>{"attn_cache_rows_mhc_pre_mix_norm", "kv_compress+index_key_compress_proj",
                                   "kv_rope_quant_write", "index_key_rope_quant_write"}));
  for (const Kernel& k : layer20.kernels()) EXPECT_GT(k.hbm_bytes, 0) << k.name;
  EXPECT_EQ(find_kernel(layer20, "kv_compress+index_key_compress_proj")->shape.m, 2 * 16384);
  EXPECT_EQ(find_kernel(layer20, "attn_cache_rows_mhc_pre_mix_norm")->shape.m, 2 * 16384);
  // Where one prompt ends, its 140 replayed rows get their input from the layer's own mixing.
  EXPECT_EQ(find_kernel(one_ends.layers[20], "attn_cache_rows_mhc_pre_mix_norm")->shape.m, 2 * 16384 - 140);
  EXPECT_EQ(find_kernel(one_ends.layers[21], "attn_cache_rows_mhc_pre_mix_norm"), nullptr);  // a Reuse layer
  EXPECT_LT(flops_of(none_ends), flops_of(one_ends));

  // Without CED every layer runs every row; only sampling waits.
  ModelSpec without = m.spec;
  without.ced.reset();
  const StepGraph all_layers = build_step_graph(analyze_model(without), s);
  ASSERT_EQ(all_layers.layers.size(), static_cast<std::size_t>(m.spec.num_layers));
  EXPECT_DOUBLE_EQ(all_layers.layers[39].tokens, 2 * 16384);
}

TEST(StepGraph, ContinuingPromptsAreCountedWithinTheBatch) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  StepShape s = shape(Phase::kPrefill, 2, 4096);
  s.continuing = 3;
  EXPECT_THROW(build_step_graph(m, s), InputError);
  s = shape(Phase::kDecode, 2, 4096);
  s.continuing = 1;
  EXPECT_THROW(build_step_graph(m, s), InputError);
  s.continuing = 0;
  s.mixed_prefill = {1, 1024, 8192, 2};
  EXPECT_THROW(build_step_graph(m, s), InputError);
  // A mixed step's continuing chunk: decode rows run the decoder, the chunk does not.
  s.mixed_prefill.continuing = 1;
  const StepGraph g = build_step_graph(m, s);
  EXPECT_DOUBLE_EQ(g.layers[19].tokens, 2 + 1024);
  EXPECT_DOUBLE_EQ(g.layers[30].tokens, 2);
  EXPECT_DOUBLE_EQ(g.layers[m.spec.num_layers].tokens, 2);  // the head samples the decode rows only
}

TEST(StepGraph, DecodeWeightBytesMatchTheParameterCount) {
  // At batch 1 every dense weight of a layer is read once: the graph's GEMM
  // weight bytes must agree with the parameter count of the same layer.
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  const StepGraph g = build_step_graph(m, shape(Phase::kDecode, 1, 4096, 1));
  for (int64_t layer : {0, 8, 20, 24, 30}) {
    double weights = 0;
    for (const Kernel& k : g.layers[static_cast<std::size_t>(layer)].kernels()) {
      if (k.kernel_class == KernelClass::kGemm)
        weights += static_cast<double>(k.shape.n * k.shape.k * k.shape.batch);
    }
    const LayerParams& p = m.params.layers[static_cast<std::size_t>(layer)];
    const double dense = static_cast<double>(p.attention() + p.router + p.shared_experts);
    EXPECT_NEAR(weights / dense, 1.0, 0.01) << "layer " << layer;
  }
}

// A GEMM runs the math its weights allow: Llama's BF16 checkpoint runs BF16
// GEMMs on 2-byte activations (an FP8 GEMM over BF16 weights would claim twice
// the tensor rate), V4.1's FP8 dense and FP4 expert weights take FP8 math on
// 1-byte activations. Each GEMM's bytes hold its weights and its row operand.
TEST(StepGraph, GemmMathFollowsTheWeightsFormat) {
  struct Case {
    const char* stem;
    MathType math;
    double row_bytes;
  };
  for (const Case& expected :
       {Case{"llama_3_1_405b", MathType::kBf16, 2.0}, Case{"deepseek_v4_1_flash", MathType::kFp8, 1.0}}) {
    const ModelAnalysis m = analyze(expected.stem);
    const int64_t ep = m.spec.moe ? 8 : 1;
    const StepGraph g = build_step_graph(m, shape(Phase::kPrefill, 2, 4096, ep));
    int gemms = 0;
    for (const Kernel& k : g.layers[3].kernels()) {
      const bool gemm = k.kernel_class == KernelClass::kGemm || k.kernel_class == KernelClass::kGroupedGemm;
      if (!gemm || k.name == "router" || k.name.starts_with("index_head")) continue;
      ++gemms;
      EXPECT_EQ(k.math, expected.math) << expected.stem << " " << k.name;
      EXPECT_DOUBLE_EQ(k.operands.row_bytes, expected.row_bytes) << expected.stem << " " << k.name;
    }
    EXPECT_GE(gemms, 3) << expected.stem;
  }
}

TEST(StepGraph, SameMachineryForOtherFamilies) {
  for (const char* stem :
       {"deepseek_v4_flash", "deepseek_v4_pro", "deepseek_v3", "deepseek_v3_2", "llama_3_1_405b"}) {
    const ModelAnalysis m = analyze(stem);
    const int64_t ep = m.spec.moe ? 8 : 1;
    for (Phase phase : {Phase::kPrefill, Phase::kDecode}) {
      const StepGraph g = build_step_graph(m, shape(phase, 2, 16384, ep));
      EXPECT_EQ(g.layers.size(), static_cast<std::size_t>(m.spec.num_layers + 1)) << stem;
      EXPECT_GT(flops_of(g), 0) << stem;
    }
  }
}

TEST(StepGraph, MhcFusionHalvesItsTraffic) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  StepShape s = shape(Phase::kPrefill, 1, 8192);
  auto mhc_bytes = [&](bool fused) {
    s.engine.mhc_form = fused ? MhcForm::kSinglePass : MhcForm::kThreeKernel;
    double bytes = 0;
    const StepGraph g = build_step_graph(m, s);
    for (const Kernel& k : g.layers[5].kernels()) {
      if (k.name.find("mhc") != std::string::npos) bytes += k.hbm_bytes;
    }
    return bytes;
  };
  const double three_kernel = mhc_bytes(false);
  const double fused = mhc_bytes(true);
  EXPECT_NEAR(three_kernel / fused, 1.8, 0.05);  // (4s+2)/(2s+2) with 4 streams
}

// One decode token: the fused mHC kernel moves the token's streams in and
// out ((2s + 2) h BF16 values; the projection, on the tensor cores, is not
// timed); its CUDA-core work grows with the Sinkhorn iterations (2
// normalisations of s x s each).
TEST(StepGraph, MhcCountsItsSinkhornIterations) {
  ModelAnalysis m = analyze("deepseek_v4_1_flash");
  const StepShape s = shape(Phase::kDecode, 1, 4096);
  const auto fused = [&](const ModelAnalysis& model) {
    const StepGraph g = build_step_graph(model, s);
    for (const Kernel& k : g.layers[5].kernels()) {
      if (k.name == "attn_mhc_fused") return k;
    }
    ADD_FAILURE() << "no attn_mhc_fused kernel";
    return Kernel{};
  };
  const Kernel k = fused(m);
  const double h = static_cast<double>(m.spec.hidden_size);
  const auto tokens = static_cast<double>(k.shape.m);
  EXPECT_DOUBLE_EQ(k.hbm_bytes, tokens * 10 * h * 2);
  m.spec.mhc->sinkhorn_iters += 10;
  EXPECT_DOUBLE_EQ(fused(m).flops - k.flops, tokens * 10 * 2 * 4 * 16);
}

TEST(StepGraph, BadShapesAreInputErrors) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  EXPECT_THROW(build_step_graph(m, shape(Phase::kDecode, 0, 100)), InputError);
  EXPECT_THROW(build_step_graph(m, shape(Phase::kDecode, 1, 0)), InputError);
  EXPECT_THROW(build_step_graph(m, shape(Phase::kDecode, 1, 2000000)), InputError);
  EXPECT_THROW(build_step_graph(m, shape(Phase::kDecode, 1, 100, 7)), InputError);
  StepShape mixed = shape(Phase::kDecode, 4, 8192);
  mixed.mixed_prefill = {1, 4096, 2048};  // more new tokens than the prompt has
  EXPECT_THROW(build_step_graph(m, mixed), InputError);
  mixed.mixed_prefill = {1, 2048, 2000000};  // past max_context
  EXPECT_THROW(build_step_graph(m, mixed), InputError);
  StepShape prefill = shape(Phase::kPrefill, 1, 8192);
  prefill.mixed_prefill = {1, 1024, 8192};  // chunks ride on decode steps only
  EXPECT_THROW(build_step_graph(m, prefill), InputError);
}

// A decode step carrying prompt chunks does the work of both steps, FLOP for
// FLOP, but reads each weight once: its GEMMs take both groups' tokens, while
// attention and the indexer run per group, and its EP transfers use the
// normal kernels (the batch holds prompt tokens).
TEST(StepGraph, MixedStepSharesTheWeightsAndKeepsAttentionPerGroup) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  StepShape decode = shape(Phase::kDecode, 32, 65536);
  decode.decode_tokens_per_sequence = 3;
  decode.include_draft = true;
  decode.routed_by_chance = false;  // by chance, the busiest rank's share shrinks as a step's tokens grow
  StepShape prefill = shape(Phase::kPrefill, 2, 16384);
  prefill.new_tokens = 4096;
  prefill.routed_by_chance = false;
  StepShape mixed = decode;
  mixed.mixed_prefill = {2, 4096, 16384};
  const StepGraph d = build_step_graph(m, decode);
  const StepGraph p = build_step_graph(m, prefill);
  const StepGraph x = build_step_graph(m, mixed);
  EXPECT_NEAR(flops_of(x), flops_of(d) + flops_of(p), 1e-9 * flops_of(x));
  const auto bytes_of = [](const StepGraph& g) {
    double total = 0;
    for (const LayerKernels& l : g.layers)
      for (const Kernel& k : l.kernels()) total += k.hbm_bytes;
    return total;
  };
  // At least the backbone's dense weights are read once instead of twice.
  EXPECT_LT(bytes_of(x), bytes_of(d) + bytes_of(p) - 0.9 * m.weights.dense);
  const LayerKernels& full = x.layers[20];
  for (const char* name : {"sparse_attention", "sparse_attention_prompt_chunks", "indexer_logits",
                           "indexer_logits_prompt_chunks", "topk_select_prompt_chunks"}) {
    EXPECT_NE(find_kernel(full, name), nullptr) << name;
  }
  EXPECT_DOUBLE_EQ(find_kernel(full, "sparse_attention_prompt_chunks")->flops,
                   find_kernel(p.layers[20], "sparse_attention")->flops);
  EXPECT_DOUBLE_EQ(find_kernel(full, "sparse_attention")->flops,
                   find_kernel(d.layers[20], "sparse_attention")->flops);
  // Under CED the decoder layers run the prompts' kept tail next to the decode tokens.
  EXPECT_DOUBLE_EQ(full.tokens, 32.0 * 3.0 + 2.0 * 140.0);
  EXPECT_DOUBLE_EQ(x.layers[5].tokens, 32.0 * 3.0 + 2.0 * 4096.0);
  EXPECT_TRUE(find_kernel(d.layers[5], "ep_dispatch")->low_latency);
  EXPECT_FALSE(find_kernel(x.layers[5], "ep_dispatch")->low_latency);
  // Two micro-batches take half of each group.
  mixed.overlap_communication = true;
  const StepGraph halves = build_step_graph(m, mixed);
  EXPECT_EQ(halves.micro_batches, 2);
  EXPECT_DOUBLE_EQ(halves.layers[5].tokens, 16.0 * 3.0 + 1.0 * 4096.0);
}

// The graph builds each kind of layer once and copies it: every layer it
// holds must be what building that layer alone gives, field by field, in
// every family, phase and split (a field the kind leaves out would show here
// as a layer that copied another's work).
void expect_same_kernels(const LayerKernels& built, const LayerKernels& alone, const std::string& where) {
  EXPECT_EQ(built.mode, alone.mode) << where;
  EXPECT_EQ(built.tokens, alone.tokens) << where;
  ASSERT_EQ(built.kernels().size(), alone.kernels().size()) << where;
  for (std::size_t i = 0; i < built.kernels().size(); ++i) {
    const Kernel& a = built.kernels()[i];
    const Kernel& b = alone.kernels()[i];
    const std::string at = where + " kernel " + a.name;
    EXPECT_EQ(a.name, b.name) << at;
    EXPECT_EQ(a.kernel_class, b.kernel_class) << at;
    EXPECT_EQ(a.math, b.math) << at;
    EXPECT_EQ(a.stream, b.stream) << at;
    EXPECT_EQ(a.shape.m, b.shape.m) << at;
    EXPECT_EQ(a.shape.n, b.shape.n) << at;
    EXPECT_EQ(a.shape.k, b.shape.k) << at;
    EXPECT_EQ(a.shape.batch, b.shape.batch) << at;
    EXPECT_EQ(a.flops, b.flops) << at;
    EXPECT_EQ(a.hbm_bytes, b.hbm_bytes) << at;
    EXPECT_EQ(a.l2_reuse_bytes, b.l2_reuse_bytes) << at;
    EXPECT_EQ(a.epilogue_bytes, b.epilogue_bytes) << at;
    EXPECT_EQ(a.narrow, b.narrow) << at;
    EXPECT_EQ(a.operands, b.operands) << at;
    EXPECT_EQ(a.tiling, b.tiling) << at;
    EXPECT_EQ(a.input, b.input) << at;
    EXPECT_EQ(a.link_bytes, b.link_bytes) << at;
    EXPECT_EQ(a.off_node_fraction, b.off_node_fraction) << at;
    EXPECT_EQ(a.low_latency, b.low_latency) << at;
  }
}

// The backbone layers of one micro-batch's graph against each layer built alone.
void expect_each_layer_as_built_alone(const ModelAnalysis& m, const StepShape& micro_batch,
                                      const std::vector<LayerKernels>& layers, const std::string& where) {
  std::size_t next = 0;
  for (const LayerPlanEntry& plan : m.plan) {
    const LayerKernels alone = backbone_layer(m, micro_batch, plan);
    const std::string at = where + " layer " + std::to_string(plan.layer);
    if (alone.kernels().empty()) continue;  // a layer with nothing to run is left out of the graph
    ASSERT_LT(next, layers.size()) << at;
    EXPECT_EQ(layers[next].layer, plan.layer) << at;
    EXPECT_GE(layers[next].kind, 0) << at;
    expect_same_kernels(layers[next], alone, at);
    ++next;
  }
  // What follows the backbone is the head, of no kind, the draft stages, one
  // kind past every backbone kind, numbered on from the head, and the
  // draft's head, of no kind.
  int64_t backbone_kinds = 0;
  for (std::size_t i = 0; i < next; ++i) backbone_kinds = std::max(backbone_kinds, layers[i].kind + 1);
  const int64_t head = m.spec.num_layers;
  const int64_t draft_head = head + 1 + (m.spec.draft ? m.spec.draft->stages : 0);
  for (; next < layers.size(); ++next) {
    const LayerKernels& layer = layers[next];
    const bool a_head = layer.layer == head || layer.layer == draft_head;
    EXPECT_EQ(layer.kind, a_head ? -1 : backbone_kinds) << where << " layer " << layer.layer;
    if (layer.layer > head) {
      EXPECT_EQ(layer.mode, layer.layer == draft_head ? kDraftHeadMode : "Draft") << where;
    }
  }
}

TEST(StepGraph, EachLayerKindBuiltOnceIsWhatEveryLayerOfItBuildsAlone) {
  std::vector<std::pair<std::string, StepShape>> shapes;
  StepShape prefill = shape(Phase::kPrefill, 3, 16384);
  prefill.new_tokens = 4096;
  prefill.continuing = 1;
  shapes.emplace_back("prefill chunks", prefill);
  StepShape decode = shape(Phase::kDecode, 33, 65536);
  decode.decode_tokens_per_sequence = 2;
  decode.redundant_experts = 8;
  shapes.emplace_back("decode", decode);
  StepShape mixed = decode;
  mixed.mixed_prefill = {3, 2048, 8192, 1};
  shapes.emplace_back("mixed", mixed);
  for (auto [name, s] : std::vector(shapes)) {
    s.overlap_communication = true;
    shapes.emplace_back(name + " in two micro-batches", s);
  }
  for (const char* stem : {"deepseek_v4_1_flash", "deepseek_v4_flash", "deepseek_v4_pro", "deepseek_v3",
                           "deepseek_v3_2", "llama_3_1_405b"}) {
    const ModelAnalysis m = analyze(stem);
    for (auto [name, s] : shapes) {
      if (!m.spec.moe) {
        s.ep = 1;
        s.redundant_experts = 0;
      }
      const std::string where = std::string(stem) + " " + name;
      const StepGraph g = build_step_graph(m, s);
      const std::vector<StepShape> halves = micro_batches_of(s);
      expect_each_layer_as_built_alone(m, halves.front(), g.layers, where);
      if (!g.second_layers.empty()) {
        expect_each_layer_as_built_alone(m, halves.back(), g.second_layers, where + " (second half)");
      }
    }
  }
}

}  // namespace
}  // namespace v41sim

namespace v41sim {
namespace {

TEST(ExpertLoad, UniformRoutingIsBalancedAndSkewIsNot) {
  EXPECT_DOUBLE_EQ(ep_load_imbalance(384, 8, 0.0, 0), 1.0);
  const double skewed = ep_load_imbalance(384, 8, 1.0, 0);
  EXPECT_GT(skewed, 1.05);
  // Redundant replicas of the hottest experts bring the busiest rank down.
  EXPECT_LT(ep_load_imbalance(384, 8, 1.0, 32), skewed);
  EXPECT_DOUBLE_EQ(ep_load_imbalance(384, 1, 1.0, 0), 1.0);
}

// DeepSeek's EPLB gives each redundant slot to the expert with the most load
// per replica, so a hot expert takes several. Worked by hand: popularity
// 1, 1/4, 1/9, 1/16 (Zipf 2) over 4 ranks of 2 slots, 4 redundant: the first
// expert takes all four (1/2, 1/3, 1/4, then 1/5 on the tie with the
// second's 1/4, the lower index first), and packing the replicas heaviest
// first onto the least-loaded rank with room leaves the busiest at 2/5. One
// extra replica an expert, the older rule, left 1/2 on a rank.
TEST(ExpertLoad, AHotExpertTakesAsManyReplicasAsItsLoadAsks) {
  const double total = 1.0 + 1.0 / 4 + 1.0 / 9 + 1.0 / 16;
  EXPECT_NEAR(ep_load_imbalance(4, 4, 2.0, 4), 0.4 / (total / 4), 1e-12);
  EXPECT_LT(ep_load_imbalance(4, 4, 2.0, 4), 0.5 / (total / 4));
}

// One step's routing, drawn many times: each token picks top_k distinct
// slots uniformly, the ranks hold slots / ep each; the busiest rank's copies
// and reached slots, averaged over the draws.
BusiestRank drawn_busiest_rank(int64_t tokens, int64_t top_k, int64_t slots, int64_t ep, int draws) {
  std::mt19937_64 rng(7);
  std::vector<int64_t> order(static_cast<std::size_t>(slots));
  double rows = 0, reached = 0;
  for (int d = 0; d < draws; ++d) {
    std::vector<int64_t> copies(static_cast<std::size_t>(slots), 0);
    for (int64_t t = 0; t < tokens; ++t) {
      std::iota(order.begin(), order.end(), 0);
      for (int64_t k = 0; k < top_k; ++k) {  // a partial shuffle: top_k distinct slots
        std::uniform_int_distribution<int64_t> pick(k, slots - 1);
        std::swap(order[static_cast<std::size_t>(k)], order[static_cast<std::size_t>(pick(rng))]);
        ++copies[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])];
      }
    }
    int64_t most_rows = 0, most_reached = 0;
    for (int64_t r = 0; r < ep; ++r) {
      int64_t rank_rows = 0, rank_reached = 0;
      for (int64_t i = r * slots / ep; i < (r + 1) * slots / ep; ++i) {
        rank_rows += copies[static_cast<std::size_t>(i)];
        rank_reached += copies[static_cast<std::size_t>(i)] > 0 ? 1 : 0;
      }
      most_rows = std::max(most_rows, rank_rows);
      most_reached = std::max(most_reached, rank_reached);
    }
    rows += static_cast<double>(most_rows);
    reached += static_cast<double>(most_reached);
  }
  const double mean_rows = static_cast<double>(tokens * top_k) / static_cast<double>(ep);
  return {rows / draws / mean_rows, reached / draws};
}

// Even where every slot is equally likely, one step's copies fall unevenly:
// the busiest rank, which every MoE layer waits for, gets more copies and
// reaches more experts than the mean rank. Checked against drawn routings,
// in the exact (few copies) and the normal (many) regimes; the model's
// independent copies spread a little wider than a token's distinct picks.
TEST(ExpertLoad, OneStepsRoutingLoadsTheBusiestRankByChance) {
  struct Case {
    int64_t tokens, top_k, slots, ep;
  };
  for (const Case c :
       {Case{8, 6, 256, 8}, Case{72, 6, 432, 72}, Case{512, 6, 416, 8}, Case{2048, 8, 288, 72}}) {
    const BusiestRank model = busiest_rank(static_cast<double>(c.tokens), static_cast<double>(c.top_k),
                                           static_cast<double>(c.slots), c.ep);
    const BusiestRank mean = average_rank(static_cast<double>(c.tokens), static_cast<double>(c.top_k),
                                          static_cast<double>(c.slots), c.ep);
    const BusiestRank drawn = drawn_busiest_rank(c.tokens, c.top_k, c.slots, c.ep, 400);
    EXPECT_GT(model.rows_over_mean, 1.0) << c.tokens;
    EXPECT_DOUBLE_EQ(mean.rows_over_mean, 1.0);
    EXPECT_NEAR(model.rows_over_mean, drawn.rows_over_mean, 0.03 * drawn.rows_over_mean) << c.tokens;
    EXPECT_NEAR(model.experts_reached, drawn.experts_reached, 0.05 * drawn.experts_reached) << c.tokens;
    EXPECT_GE(model.experts_reached, mean.experts_reached) << c.tokens;
  }
  // Few tokens over many ranks: the busiest rank reaches far more than the mean.
  const BusiestRank one_token = busiest_rank(72, 6, 432, 72);
  EXPECT_GT(one_token.experts_reached, 1.4 * average_rank(72, 6, 432, 72).experts_reached);
  // Many tokens: the spread vanishes against the mean.
  EXPECT_LT(busiest_rank(65536, 6, 416, 8).rows_over_mean, 1.01);
  // One rank is its own busiest.
  EXPECT_DOUBLE_EQ(busiest_rank(64, 6, 384, 1).rows_over_mean, 1.0);
  EXPECT_NEAR(busiest_rank(64, 6, 384, 1).experts_reached, average_rank(64, 6, 384, 1).experts_reached, 1e-9);
}

// A step routed by chance waits for its busiest rank; a benchmark that routes
// evenly by construction (routed_by_chance false) costs the mean rank.
TEST(StepGraph, ChanceRoutingLoadsTheBusiestRank) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  StepShape s = shape(Phase::kDecode, 1, 8192);
  s.ep = 72;
  s.redundant_experts = 48;
  s.include_draft = false;
  const Kernel chance = *find_kernel(build_step_graph(m, s).layers[5], "experts_gate_up");
  const Kernel dispatch = *find_kernel(build_step_graph(m, s).layers[5], "ep_dispatch");
  s.routed_by_chance = false;
  const Kernel even = *find_kernel(build_step_graph(m, s).layers[5], "experts_gate_up");
  EXPECT_GT(chance.hbm_bytes, 1.4 * even.hbm_bytes);  // more experts' weights read
  EXPECT_GT(chance.flops, even.flops);
  EXPECT_GT(dispatch.link_bytes, find_kernel(build_step_graph(m, s).layers[5], "ep_dispatch")->link_bytes);
}

// Redundant replicas are expert slots: each rank holds (routed + redundant)
// / EP and reads the weights of those its tokens reach, which makes EP sizes
// that do not divide the experts possible (DeepSeek's decode: V3's 256 plus
// 32 over EP 144; SGLang's over EP 72).
TEST(StepGraph, RedundantExpertsAreSlotsEachRankReads) {
  const ModelAnalysis v3 = analyze("deepseek_v3");
  StepShape s = shape(Phase::kPrefill, 1, 8192);  // enough tokens to reach every slot
  auto groups = [&](int64_t ep, int64_t redundant) {
    s.ep = ep;
    s.redundant_experts = redundant;
    return find_kernel(build_step_graph(v3, s).layers[5], "experts_gate_up")->shape.batch;
  };
  EXPECT_EQ(groups(8, 0), 32);
  EXPECT_EQ(groups(8, 32), 36);
  EXPECT_EQ(groups(72, 32), 4);
  EXPECT_EQ(groups(144, 32), 2);
  try {
    groups(72, 0);
    ADD_FAILURE() << "EP 72 over V3's 256 experts alone was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("field '--ep': EP size 72 does not divide the 256 routed experts"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("32 redundant replicas would make 288 slots"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(groups(8, 300), InputError);  // more replicas than experts
}

TEST(StepGraph, ImbalanceLoadsTheBusiestRank) {
  const ModelAnalysis m = analyze("deepseek_v4_1_flash");
  StepShape s = shape(Phase::kPrefill, 1, 8192);
  const double balanced = find_kernel(build_step_graph(m, s).layers[5], "experts_gate_up")->flops;
  s.ep_load_imbalance = 1.25;
  const StepGraph skewed = build_step_graph(m, s);
  EXPECT_DOUBLE_EQ(find_kernel(skewed.layers[5], "experts_gate_up")->flops, 1.25 * balanced);
  s.ep_load_imbalance = 0.5;
  EXPECT_THROW(build_step_graph(m, s), InputError);
}

// Layers of one kind hold one list of kernels between them, and layers of
// different kinds never share one: the graph copies no kernel.
TEST(StepGraph, LayersOfOneKindShareOneKernelList) {
  StepShape decode = shape(Phase::kDecode, 64, 32768);
  decode.include_draft = true;
  decode.decode_tokens_per_sequence = 3;
  const ModelAnalysis model = analyze("deepseek_v4_1_flash");
  const StepGraph g = build_step_graph(model, decode);
  std::map<int64_t, const std::vector<Kernel>*> list_of_kind;
  std::set<const std::vector<Kernel>*> lists;
  for (const LayerKernels& layer : g.layers) {
    if (layer.kind < 0) continue;
    const auto [known, added] = list_of_kind.emplace(layer.kind, &layer.kernels());
    if (added) {
      EXPECT_TRUE(lists.insert(&layer.kernels()).second) << "layer " << layer.layer;
    } else {
      EXPECT_EQ(known->second, &layer.kernels()) << "layer " << layer.layer;
    }
  }
  EXPECT_GT(g.layers.size(), 2 * list_of_kind.size());  // most layers took a kind built before
  const auto drafts = std::count_if(g.layers.begin(), g.layers.end(),
                                    [](const LayerKernels& l) { return l.mode == "Draft"; });
  EXPECT_EQ(drafts, model.spec.draft->stages);
}

// The draft's block of positions a sequence ends in a projection onto the
// vocabulary after the last stage: the backbone's head, run again on the
// block (the same weights read again); a step without drafts runs none.
TEST(StepGraph, TheDraftsBlockGoesThroughTheOutputHead) {
  const ModelAnalysis model = analyze("deepseek_v4_1_flash");
  const DraftSpec& draft = *model.spec.draft;
  StepShape decode = shape(Phase::kDecode, 33, 65536);
  decode.decode_tokens_per_sequence = 3;
  decode.include_draft = true;
  const StepGraph g = build_step_graph(model, decode);
  const LayerKernels& last = g.layers.back();
  EXPECT_EQ(last.mode, kDraftHeadMode);
  EXPECT_EQ(last.layer, model.spec.num_layers + 1 + draft.stages);
  EXPECT_EQ(last.kind, -1);
  EXPECT_EQ(last.tokens, static_cast<double>(33 * draft.block_size));
  const Kernel* draft_head = find_kernel(last, "draft_lm_head");
  ASSERT_NE(draft_head, nullptr);
  const double h = static_cast<double>(model.spec.hidden_size);
  const double vocab = static_cast<double>(model.spec.vocab_size);
  EXPECT_DOUBLE_EQ(draft_head->flops, 2.0 * last.tokens * vocab * h);
  const auto head =
      std::find_if(g.layers.begin(), g.layers.end(), [](const LayerKernels& l) { return l.mode == "Head"; });
  ASSERT_NE(head, g.layers.end());
  const Kernel* lm_head = find_kernel(*head, "lm_head");
  ASSERT_NE(lm_head, nullptr);
  // Both read the head's weights (vocab x hidden at the embedding's format)
  // and their own rows in and logits out: the bytes part by the rows alone.
  const double row_bytes = (lm_head->hbm_bytes - draft_head->hbm_bytes) / (head->tokens - last.tokens);
  EXPECT_GT(draft_head->hbm_bytes - last.tokens * row_bytes, vocab * h * 0.5);
  decode.include_draft = false;
  const StepGraph plain = build_step_graph(model, decode);
  EXPECT_EQ(plain.layers.back().mode, "Head");
}

}  // namespace
}  // namespace v41sim
