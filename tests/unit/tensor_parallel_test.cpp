// Tensor-parallel attention: what one GPU of an attention rank runs, holds,
// and how a pool of such ranks serves (sim/graph/tensor_parallel.h).
#include "sim/graph/tensor_parallel.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "sim/capacity/memory_fit.h"
#include "sim/common/input_error.h"
#include "sim/costing/decode_frontier.h"
#include "sim/costing/deployment_plan.h"
#include "sim/serving/pool_setup.h"
#include "sim/serving/serving_simulation.h"
#include "sim/serving/workload_spec.h"
#include "tests/step_test_support.h"

namespace v41sim {
namespace {

using testing::analyze;
using testing::shape;

std::string data(const std::string& file) { return std::string(V41SIM_SOURCE_DIR) + "/" + file; }

const Kernel* find_kernel(const LayerKernels& layer, const std::string& name) {
  for (const Kernel& k : layer.kernels()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

double flops_of(const LayerKernels& layer, const std::string& name) {
  const Kernel* k = find_kernel(layer, name);
  return k != nullptr ? k->flops : -1.0;
}

// A decode step of V4-Flash, every rank alike and its routing even (each GPU
// takes exactly its share of the routed rows), at data-parallel attention or
// at TP `tp` over the same 8 GPUs.
StepGraph v4_flash_decode(int64_t tp) {
  StepShape s = shape(Phase::kDecode, 32, 65536, 8);
  s.include_draft = false;
  s.routed_by_chance = false;
  s.attention_tp = tp;
  return build_step_graph(analyze("deepseek_v4_flash"), s);
}

// Against data-parallel ranks each decoding the same 32 sequences, a GPU of a
// TP8 rank (32 sequences over 8 GPUs) projects its 8 heads' queries and
// outputs, attends with the 64 heads the sparse kernel takes, runs the
// indexer whole, takes 1/8 of the routed rows (the rank's tokens, not 8
// ranks') with no all-to-all, and sums both blocks over the 8 GPUs.
TEST(TensorParallel, AGpuOfARankRunsItsShareOfTheHeadsAndSumsBothBlocks) {
  const StepGraph dp = v4_flash_decode(1);
  const StepGraph tp = v4_flash_decode(8);
  ASSERT_EQ(dp.layers.size(), tp.layers.size());
  const LayerKernels& swa_dp = dp.layers[0];  // a window-only layer: its query up-projection stands alone
  const LayerKernels& swa_tp = tp.layers[0];
  for (const char* split : {"q_up_proj", "out_group_proj", "out_proj", "shared_gate_up", "shared_down",
                            "experts_gate_up", "experts_down"}) {
    ASSERT_GT(flops_of(swa_dp, split), 0) << split;
    EXPECT_NEAR(flops_of(swa_tp, split), flops_of(swa_dp, split) / 8, 1e-9 * flops_of(swa_dp, split))
        << split;
  }
  for (const char* whole : {"q_down+window_kv_proj", "attention", "router"}) {
    ASSERT_GT(flops_of(swa_dp, whole), 0) << whole;
    EXPECT_DOUBLE_EQ(flops_of(swa_tp, whole), flops_of(swa_dp, whole)) << whole;
  }
  const LayerKernels& csa_tp = tp.layers[2];  // an indexed layer: its indexer stays whole
  EXPECT_DOUBLE_EQ(flops_of(csa_tp, "indexer_logits"), flops_of(dp.layers[2], "indexer_logits"));
  for (const LayerKernels& layer : tp.layers) {
    EXPECT_EQ(find_kernel(layer, "ep_dispatch"), nullptr) << layer.layer;
    EXPECT_EQ(find_kernel(layer, "ep_combine"), nullptr) << layer.layer;
  }
  EXPECT_NE(find_kernel(swa_dp, "ep_dispatch"), nullptr);
  EXPECT_EQ(find_kernel(swa_dp, "attn_tp_all_reduce"), nullptr);
  // A ring sums 32 tokens x 4096 BF16 values: each GPU sends 2 x 7/8 of them.
  for (const char* sum : {"attn_tp_all_reduce", "ffn_tp_all_reduce"}) {
    const Kernel* k = find_kernel(swa_tp, sum);
    ASSERT_NE(k, nullptr) << sum;
    EXPECT_DOUBLE_EQ(k->link_bytes, 32.0 * 4096 * 2 * 2 * 7 / 8) << sum;
    EXPECT_EQ(k->stream, Stream::kCommunication);
  }
  // The head projects the GPU's eighth of the vocabulary; one GPU gathers the rest.
  const LayerKernels& head_dp = dp.layers[43];
  const LayerKernels& head_tp = tp.layers[43];
  ASSERT_EQ(head_tp.mode, "Head");
  EXPECT_DOUBLE_EQ(flops_of(head_tp, "lm_head"), flops_of(head_dp, "lm_head") / 8);
  const Kernel* gather = find_kernel(head_tp, "logits_tp_gather");
  ASSERT_NE(gather, nullptr);
  EXPECT_DOUBLE_EQ(gather->link_bytes, 32.0 * 129280 * 2 * 7 / 8);
  // The embedding is split by vocabulary too: the first layer opens by summing the step's 32 rows,
  // once a step; a data-parallel rank holds it whole and sums nothing.
  ASSERT_FALSE(swa_tp.kernels().empty());
  EXPECT_EQ(swa_tp.kernels().front().name, "embed_tp_all_reduce");
  EXPECT_DOUBLE_EQ(swa_tp.kernels().front().link_bytes, 32.0 * 4096 * 2 * 2 * 7 / 8);
  for (const LayerKernels& layer : tp.layers) {
    if (layer.layer != 0) {
      EXPECT_EQ(find_kernel(layer, "embed_tp_all_reduce"), nullptr) << layer.layer;
    }
  }
  for (const LayerKernels& layer : dp.layers) EXPECT_EQ(find_kernel(layer, "embed_tp_all_reduce"), nullptr);
}

// Ranks of 4 GPUs inside an EP group of 8 (SGLang's --tp 8 --dp 2
// --enable-dp-attention): attention as a rank's (its heads split, the sum
// reduce-scattered), then each GPU runs the feed-forward block on its quarter
// of the rank's tokens with whole shared experts, sends it to the experts, and
// the quarters are all-gathered before the next layer.
TEST(TensorParallel, RanksInsideALargerGroupScatterTheirTokensToTheExperts) {
  const ModelAnalysis m = analyze("deepseek_v4_flash");
  StepShape dp = shape(Phase::kDecode, 32, 65536, 8);
  dp.include_draft = false;
  dp.routed_by_chance = false;
  StepShape hybrid = dp;
  hybrid.attention_tp = 4;
  const LayerKernels one = build_step_graph(m, dp).layers[0];
  const LayerKernels four = build_step_graph(m, hybrid).layers[0];
  EXPECT_NEAR(flops_of(four, "q_up_proj"), flops_of(one, "q_up_proj") / 4, 1e-9 * flops_of(one, "q_up_proj"));
  EXPECT_DOUBLE_EQ(flops_of(four, "attention"), flops_of(one, "attention"));
  const double message = 32.0 * 4096 * 2;
  for (const char* half : {"attn_tp_reduce_scatter", "ffn_tp_all_gather"}) {
    const Kernel* k = find_kernel(four, half);
    ASSERT_NE(k, nullptr) << half;
    EXPECT_DOUBLE_EQ(k->link_bytes, message * 3 / 4) << half;
  }
  EXPECT_EQ(find_kernel(four, "attn_tp_all_reduce"), nullptr);
  EXPECT_EQ(find_kernel(four, "ffn_tp_all_reduce"), nullptr);
  // The block on 8 tokens: the router, the whole shared expert, the dispatch.
  EXPECT_DOUBLE_EQ(flops_of(four, "router"), flops_of(one, "router") / 4);
  EXPECT_DOUBLE_EQ(flops_of(four, "shared_gate_up"), flops_of(one, "shared_gate_up") / 4);
  const Kernel* dispatch = find_kernel(four, "ep_dispatch");
  ASSERT_NE(dispatch, nullptr);
  EXPECT_EQ(dispatch->shape.m, 8);
  // The group sends 2 ranks x 32 tokens, not 8 x 32: a GPU's experts take a quarter of the rows.
  EXPECT_DOUBLE_EQ(flops_of(four, "experts_gate_up"), flops_of(one, "experts_gate_up") / 4);
  StepShape columns = hybrid;
  columns.experts_split_by_columns = true;
  try {
    build_step_graph(m, columns);
    FAIL() << "columns inside a larger EP group were accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("its own EP group (attention_tp 4 against EP 8)"), std::string::npos)
        << e.what();
  }
}

// Split by columns (SGLang's --tp without --ep), a GPU of a TP8 rank runs
// every routed row, not an eighth of them, on each expert's eighth of its
// intermediate columns: the same FLOPs as the whole experts a GPU, and no
// busiest rank (by chance or by placement) to wait for.
TEST(TensorParallel, ExpertsSplitByColumnsRunEveryRowOnTheirSlice) {
  const ModelAnalysis m = analyze("deepseek_v4_flash");
  StepShape whole = shape(Phase::kDecode, 32, 65536, 8);
  whole.include_draft = false;
  whole.attention_tp = 8;
  whole.ep_load_imbalance = 1.5;  // a skewed placement: whole experts wait for the busiest GPU
  StepShape columns = whole;
  columns.experts_split_by_columns = true;
  const LayerKernels by_expert = build_step_graph(m, whole).layers[0];
  const LayerKernels by_column = build_step_graph(m, columns).layers[0];
  const Kernel* gate_up = find_kernel(by_column, "experts_gate_up");
  ASSERT_NE(gate_up, nullptr);
  const double rows = 32.0 * 6;  // every routed copy of the rank's 32 tokens
  EXPECT_DOUBLE_EQ(gate_up->flops, 2.0 * rows * (2.0 * 2048 / 8) * 4096);
  EXPECT_EQ(gate_up->shape.n, 2 * 2048 / 8);
  const Kernel* down = find_kernel(by_column, "experts_down");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->shape.k, 2048 / 8);
  // Whole experts: an eighth of the rows, at least the even share, times the placement's skew.
  EXPECT_GT(flops_of(by_expert, "experts_gate_up"), 1.5 * gate_up->flops);
  EXPECT_EQ(find_kernel(by_column, "ep_dispatch"), nullptr);
  EXPECT_NE(find_kernel(by_column, "ffn_tp_all_reduce"), nullptr);

  const auto refused = [&](StepShape s, const std::string& says) {
    s.experts_split_by_columns = true;
    try {
      build_step_graph(m, s);
      FAIL() << says;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().field, "--experts-by-columns");
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  StepShape data_parallel = whole;
  data_parallel.attention_tp = 1;
  refused(data_parallel, "expected attention_tp of 2 or more");
  StepShape replicas = whole;
  replicas.redundant_experts = 8;
  refused(replicas, "expected no redundant experts (got 8)");
}

// V3's 128 heads at TP8 leave a GPU 16: its latent decode kernel computes the
// 64 it pads them to (half the data-parallel rank's 128), while prefill,
// attending over up-projected keys, runs its 16.
TEST(TensorParallel, LatentAttentionPadsAGpusHeadsToTheKernelsTile) {
  const ModelAnalysis v3 = analyze("deepseek_v3");
  for (const auto& [phase, share] : {std::pair{Phase::kDecode, 0.5}, std::pair{Phase::kPrefill, 0.125}}) {
    StepShape dp = shape(phase, 4, 4096, 8);
    dp.include_draft = false;
    StepShape tp = dp;
    tp.attention_tp = 8;
    const LayerKernels dense_dp = build_step_graph(v3, dp).layers[0];
    const LayerKernels dense_tp = build_step_graph(v3, tp).layers[0];
    ASSERT_GT(flops_of(dense_dp, "attention"), 0);
    EXPECT_DOUBLE_EQ(flops_of(dense_tp, "attention"), flops_of(dense_dp, "attention") * share)
        << (phase == Phase::kDecode ? "decode" : "prefill");
  }
}

void expect_refused(const std::string& model, int64_t tp, int64_t ep, int64_t ep_per_node,
                    const std::string& says) {
  StepShape s = shape(Phase::kDecode, 1, 1024, ep);
  s.include_draft = false;
  s.attention_tp = tp;
  s.ep_per_node = ep_per_node;
  try {
    build_step_graph(analyze(model), s);
    FAIL() << model << " at TP " << tp << " and EP " << ep << " was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "--attention-tp");
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(TensorParallel, ALayoutItCannotSplitIsRefused) {
  expect_refused("deepseek_v4_flash", 16, 16, 16,
                 "divides DeepSeek-V4-Flash's 64 query heads and 8 output groups");
  expect_refused("deepseek_v4_flash", 8, 4, 8, "divides the EP group (4)");
  expect_refused("deepseek_v3", 16, 16, 8, "at most 8 GPUs (one NVLink domain");
  expect_refused("llama_3_1_405b", 8, 8, 8, "keeps 8 KV heads");
  expect_refused("deepseek_v4_flash", 0, 8, 8, "at least 1 GPU");
}

// A GPU of a TP8 rank holds an eighth of what the rank splits (the per-head
// projections, the output projection and the shared experts, counted from the
// model's dimensions here) and of the embedding and head; the whole KV of the
// rank's sessions, so the 8 GPUs keep one GPU's worth of sessions.
TEST(TensorParallel, ARankSplitsItsPerHeadWeightsAndHoldsItsKvOnEveryGpu) {
  const ModelAnalysis m = analyze("deepseek_v4_flash");
  const AttentionSpec& a = m.spec.attention;
  const LayerParams& layer = m.params.layers[2];
  EXPECT_EQ(layer.query_up, a.q_lora_rank * a.num_heads * a.head_dim);
  EXPECT_EQ(layer.split_by_heads(), layer.query_up + a.num_heads * a.v_head_dim * a.output_lora_rank +
                                        a.output_groups * a.output_lora_rank * m.spec.hidden_size);
  EXPECT_EQ(layer.split_by_columns(), 3 * m.spec.hidden_size * m.spec.moe->expert_intermediate);
  FitRequest dp{
      8, 8, 1048576, m.spec.weights, DensePlacement::kReplicated, SourcedValue::assumed(0.05, "test"), 0};
  FitRequest tp = dp;
  tp.attention_tp = 8;
  const GpuProfile b200 = load_gpu_profile_file(testing::gpu_path("b200"));
  const FitResult one = lay_out_memory(m, b200, dp);
  const FitResult eight = lay_out_memory(m, b200, tp);
  const WeightBytes weights = weight_bytes(m.spec, m.params, m.spec.weights);
  const double split = weights.dense_split.by_heads + weights.dense_split.by_columns;
  EXPECT_GT(weights.dense_split.by_columns, 0);
  EXPECT_NEAR(one.dense_bytes_per_gpu - eight.dense_bytes_per_gpu, split * 7 / 8,
              1e-6 * one.dense_bytes_per_gpu);
  EXPECT_NEAR(eight.embedding_bytes_per_gpu, one.embedding_bytes_per_gpu / 8,
              1e-9 * one.embedding_bytes_per_gpu);
  EXPECT_DOUBLE_EQ(eight.routed_expert_bytes_per_gpu, one.routed_expert_bytes_per_gpu);
  const auto per_gpu_room = [&](const FitResult& f) {
    return static_cast<int64_t>(std::floor(f.kv_bytes_per_gpu / f.session_bytes));
  };
  EXPECT_EQ(one.sessions, 8 * per_gpu_room(one));
  EXPECT_EQ(eight.sessions, per_gpu_room(eight));  // one rank: what one GPU's room holds
  EXPECT_GT(eight.kv_bytes_per_gpu, one.kv_bytes_per_gpu);
  // Ranks of 4 inside the EP group of 8 split their heads' weights only: the
  // shared experts stay whole, run on each GPU's slice of the tokens.
  tp.attention_tp = 4;
  const FitResult four = lay_out_memory(m, b200, tp);
  EXPECT_NEAR(one.dense_bytes_per_gpu - four.dense_bytes_per_gpu, weights.dense_split.by_heads * 3 / 4,
              1e-6 * one.dense_bytes_per_gpu);
  EXPECT_EQ(four.sessions, 2 * per_gpu_room(four));  // two ranks
  tp.attention_tp = 3;
  EXPECT_THROW(lay_out_memory(m, b200, tp), InputError);
}

// 8 prompts sent together to 8 x B200: data-parallel ranks take one each and
// answer them at once; a TP8 instance is one rank, which prefills them one
// after another (vLLM's chunked prefill, first come first served).
TEST(TensorParallel, APoolOfOneRankAnInstanceServesItsPromptsInTurn) {
  const auto dir = std::filesystem::temp_directory_path() / "v41sim_tensor_parallel";
  std::filesystem::create_directories(dir);
  std::ifstream in(data("validation/published/serving/long_prompts_together.yaml"));
  std::string workload((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string length = "first_input_tokens: {dist: fixed, value: 131072}";
  ASSERT_NE(workload.find(length), std::string::npos);
  workload.replace(workload.find(length), length.size(), "first_input_tokens: {dist: fixed, value: 16384}");
  std::ofstream(dir / "w.yaml") << workload;
  const ModelAnalysis m = analyze("deepseek_v4_flash");
  const GpuCostModel prefill(V41SIM_SOURCE_DIR, testing::gpu_path("b200"), false);
  const GpuCostModel decode(V41SIM_SOURCE_DIR, testing::gpu_path("b200"), true);
  const auto first_tokens_ms = [&](const std::string& deployment_file) {
    const DeploymentSpec d = load_deployment_file(data("validation/published/serving/" + deployment_file));
    ServingSimulation sim(m, prefill.cost(), decode.cost(), d, load_workload_file((dir / "w.yaml").string()),
                          1);
    sim.enable_request_log();
    std::vector<double> ttft;
    std::vector<int> ranks;
    for (const RequestRecord& r : sim.run(600, true).requests) {
      ttft.push_back(r.ttft_ms);
      ranks.push_back(r.decode_rank);
    }
    std::sort(ttft.begin(), ttft.end());
    std::sort(ranks.begin(), ranks.end());
    return std::pair{ttft, ranks};
  };
  const auto [dp, dp_ranks] = first_tokens_ms("vllm_b200_8_dp8_ep8.yaml");
  const auto [tp, tp_ranks] = first_tokens_ms("vllm_b200_8_tp8_ep8.yaml");
  ASSERT_EQ(dp.size(), 8u);
  ASSERT_EQ(tp.size(), 8u);
  EXPECT_EQ(tp_ranks, std::vector<int>(8, 0));
  EXPECT_EQ(dp_ranks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Together: the ranks' steps carry all 8 from the second on (the first,
  // begun as the first prompt arrived, carries its chunk alone), and all are
  // answered before the one rank answers its fourth.
  EXPECT_DOUBLE_EQ(dp[1], dp.back());
  EXPECT_LT(dp.back(), tp[3]);
  for (std::size_t i = 1; i < tp.size(); ++i) EXPECT_GT(tp[i], tp[i - 1] + 0.5 * tp.front()) << i;  // in turn
}

// A deployment's attention_tp is checked at its line: against the instance's
// GPUs as the file is read, against the model and the GPU as a run lays the
// pool out.
TEST(TensorParallel, ADeploymentsRankThatCannotBeIsRefusedAtItsLine) {
  const std::string file = data("validation/published/serving/vllm_b200_8_tp8_ep8.yaml");
  std::ifstream in(file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto path = std::filesystem::temp_directory_path() / "v41sim_attention_tp.yaml";
  const auto refused = [&](int64_t tp, const std::string& says) {
    std::string changed = text;  // both pools: an aggregated deployment's prefill block mirrors decode
    for (const char* pool : {"decode", "prefill"}) {
      const std::string was =
          fmt::format("{}: {{instances: 1, gpus_per_instance: 8, ep: 8, attention_tp: 8,", pool);
      ASSERT_NE(changed.find(was), std::string::npos) << pool;
      changed.replace(
          changed.find(was), was.size(),
          fmt::format("{}: {{instances: 1, gpus_per_instance: 8, ep: 8, attention_tp: {},", pool, tp));
    }
    std::ofstream(path) << changed;
    try {
      const DeploymentSpec d = load_deployment_file(path.string());
      const GpuProfile b200 = load_gpu_profile_file(testing::gpu_path("b200"));
      pool_step_template(analyze("deepseek_v4_flash"), d.decode, b200);
      FAIL() << "attention_tp " << tp << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(e.where().field.find("attention_tp"), std::string::npos) << e.where().field;
      EXPECT_GT(e.where().line, 0) << tp;
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused(3, "divides gpus_per_instance (8), got 3");
  // The experts' split is a word the file must spell right.
  std::string split = text;
  const std::string pool = "decode: {instances: 1, gpus_per_instance: 8, ep: 8, attention_tp: 8,";
  split.replace(split.find(pool), pool.size(), pool + " routed_experts_split: rows,");
  std::ofstream(path) << split;
  try {
    load_deployment_file(path.string());
    FAIL() << "routed_experts_split: rows was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "decode.routed_experts_split");
    EXPECT_GT(e.where().line, 0);
    EXPECT_NE(std::string(e.what()).find("expected experts or columns"), std::string::npos) << e.what();
  }
  refused(0, "positive");
  // Ranks of 4 inside the instance's group of 8: two ranks, laid out; split
  // by columns there, refused at that field's line.
  std::string hybrid = text;
  for (const char* block : {"decode", "prefill"}) {
    const std::string was =
        fmt::format("{}: {{instances: 1, gpus_per_instance: 8, ep: 8, attention_tp: 8,", block);
    hybrid.replace(hybrid.find(was), was.size(),
                   fmt::format("{}: {{instances: 1, gpus_per_instance: 8, ep: 8, attention_tp: 4,", block));
  }
  std::ofstream(path) << hybrid;
  const GpuProfile b200 = load_gpu_profile_file(testing::gpu_path("b200"));
  const DeploymentSpec two_ranks = load_deployment_file(path.string());
  EXPECT_EQ(two_ranks.decode.attention_ranks(), 2);
  EXPECT_EQ(pool_step_template(analyze("deepseek_v4_flash"), two_ranks.decode, b200).attention_tp, 4);
  for (const char* block : {"decode", "prefill"}) {
    const std::string was =
        fmt::format("{}: {{instances: 1, gpus_per_instance: 8, ep: 8, attention_tp: 4,", block);
    hybrid.replace(hybrid.find(was), was.size(), was + " routed_experts_split: columns,");
  }
  std::ofstream(path) << hybrid;
  try {
    pool_step_template(analyze("deepseek_v4_flash"), load_deployment_file(path.string()).decode, b200);
    FAIL() << "columns over ranks inside a larger group were accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "decode.routed_experts_split");
    EXPECT_GT(e.where().line, 0);
  }
}

// The decode frontier of a TP8 rank: its batches run up to what one GPU's KV
// room holds (every GPU of the rank holds each session whole), and each GPU
// emits the rank's tokens over 8.
TEST(TensorParallel, AFrontierOfOneRankCountsItsBatchOnceAndItsTokensOverItsGpus) {
  const Catalog catalog(V41SIM_SOURCE_DIR);
  const ModelAnalysis m = analyze("deepseek_v4_flash");
  const DeploymentSpec tp =
      load_deployment_file(data("validation/published/serving/vllm_b200_8_tp8_ep8.yaml"));
  const int64_t context = 131072;
  const DecodeFrontier f = decode_frontier(catalog, m, tp, context);
  const GpuProfile b200 = load_gpu_profile_file(testing::gpu_path("b200"));
  EXPECT_EQ(f.sessions_per_gpu, static_cast<int64_t>(std::floor(kv_bytes_per_gpu(m, tp, tp.decode, b200) /
                                                                m.kv.session_bytes(context))));
  ASSERT_FALSE(f.points.empty());
  EXPECT_EQ(f.points.back().rate.batch_per_gpu, f.sessions_per_gpu);
  for (const FrontierPoint& p : f.points) {
    EXPECT_DOUBLE_EQ(p.rate.tokens_per_s_per_gpu,
                     static_cast<double>(p.rate.batch_per_gpu) * p.rate.tokens_per_s_per_user / 8)
        << p.rate.batch_per_gpu;
  }
}

// plan --attention dp,tp: each variant once with a rank a GPU and once with
// a rank an instance (its attention_tp its EP size, whatever EP the grid
// gives), named so; a pool that prefills context-parallel cannot be one rank.
TEST(TensorParallel, PlanTriesEachAttentionLayout) {
  const DeploymentSpec base = load_deployment_file(data("workloads/deployments/h200_pd_64.yaml"));
  PlanGrid grid;
  grid.eps = {4, 8};
  grid.attention_layouts = {*parse_attention_layout("dp"), *parse_attention_layout("tp")};
  const std::vector<DeploymentSpec> variants = plan_variants(base, grid);
  ASSERT_EQ(variants.size(), 4u);
  for (const DeploymentSpec& v : variants) {
    const bool tp = v.name.find("attention TP") != std::string::npos;
    EXPECT_NE(v.name.find(tp ? fmt::format("attention TP {}", v.decode.ep) : "data-parallel attention"),
              std::string::npos)
        << v.name;
    for (const PoolSpec* pool : {&v.prefill, &v.decode}) {
      EXPECT_EQ(pool->attention_tp, tp ? pool->ep : 1) << v.name;
      EXPECT_EQ(pool->attention_ranks(), tp ? 1 : pool->ep) << v.name;
    }
  }
  EXPECT_EQ(parse_attention_layout("4"), AttentionLayout{4});
  EXPECT_EQ(parse_attention_layout("TP8"), std::nullopt);
  EXPECT_EQ(parse_attention_layout("0"), std::nullopt);
  // Ranks of 4 at EP 4 and 8: one rank an instance, then two.
  PlanGrid fours;
  fours.eps = {4, 8};
  fours.attention_layouts = {*parse_attention_layout("4")};
  const std::vector<DeploymentSpec> ranks_of_four = plan_variants(base, fours);
  ASSERT_EQ(ranks_of_four.size(), 2u);
  EXPECT_EQ(ranks_of_four[0].decode.attention_ranks(), 1);
  EXPECT_EQ(ranks_of_four[1].decode.attention_ranks(), 2);
  EXPECT_NE(ranks_of_four[1].name.find("attention TP 4"), std::string::npos) << ranks_of_four[1].name;
  fours.attention_layouts.push_back(*parse_attention_layout("tp"));  // at EP 4, the same layout: run once
  EXPECT_EQ(plan_variants(base, fours).size(), 3u);

  // Served, the tensor-parallel variant's instances are one rank each, in
  // either pool: every request is prefilled and decoded on a rank 0.
  const DeploymentSpec& one_rank = variants.back();
  ASSERT_EQ(one_rank.decode.attention_tp, 8);
  const ModelAnalysis m = analyze("deepseek_v4_flash");
  const GpuCostModel prefill(V41SIM_SOURCE_DIR, testing::gpu_path("h200"), false);
  const GpuCostModel decode(V41SIM_SOURCE_DIR, testing::gpu_path("h200"), true);
  ServingSimulation sim(m, prefill.cost(), decode.cost(), one_rank,
                        load_workload_file(data("workloads/chat.yaml")), 1);
  sim.enable_request_log();
  const ServingResult served = sim.run(20, true);
  ASSERT_GT(served.requests.size(), 10u);
  std::set<int> decode_instances;
  for (const RequestRecord& r : served.requests) {
    EXPECT_EQ(r.prefill_rank, 0) << r.id;
    EXPECT_EQ(r.decode_rank, 0) << r.id;
    decode_instances.insert(r.decode_instance);
  }
  EXPECT_GT(decode_instances.size(), 1u);  // the instances share them

  DeploymentSpec context_parallel = variants.back();
  context_parallel.prefill.context_parallel_min_tokens = 65536;
  const GpuProfile h200 = load_gpu_profile_file(testing::gpu_path("h200"));
  try {
    pool_step_template(analyze("deepseek_v4_flash"), context_parallel.prefill, h200);
    FAIL() << "a context-parallel pool of one rank an instance was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "--attention");
    EXPECT_NE(std::string(e.what()).find("needs at least 2 attention ranks"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace v41sim
