// Published references: a probe field its kind does not have is refused with
// file, line and field, not silently ignored; the attention probe's fields are
// checked, and it times the model's own attention kernel.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "sim/common/catalog.h"
#include "sim/common/input_error.h"
#include "sim/common/yaml_reader.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/cost/step_cost.h"
#include "sim/costing/served_run.h"
#include "sim/graph/step_graph.h"
#include "sim/model/model_analysis.h"
#include "sim/model/model_loader.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/workload_spec.h"
#include "sim/validation/published_reference.h"
#include "tests/step_test_support.h"
#include "tests/test_data.h"

namespace v41sim {
namespace {

TEST(BadPublishedReference, UnknownProbeFieldIsNamed) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / "v41sim_bad_reference";
  fs::remove_all(root);
  fs::create_directories(root / "validation" / "published");
  std::ofstream(root / "validation" / "published" / "refs.yaml")
      << "references:\n"
         "  - name: a transfer\n"
         "    source: \"test\"\n"
         "    gpu: h200\n"
         "    probe: {kind: all_to_all, tokens: 128, hidden: 7168, top_k: 8, ep: 8, ep_per_node: 8,\n"
         "            bytes_per_value: 1, overlap: 1}\n"
         "    reference: {metric: us, value: 80}\n"
         "    tolerance_pct: 10\n";
  try {
    load_published_references(Catalog(root.string()));
    FAIL() << "an unknown probe field was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(e.where().file.find("refs.yaml"), std::string::npos);
    EXPECT_NE(e.where().field.find("overlap"), std::string::npos) << e.where().field;
    EXPECT_NE(std::string(e.what()).find("not a field of a 'all_to_all' probe"), std::string::npos)
        << e.what();
  }
}

// A data folder with the bundled models, GPU profiles, workloads and deployments, and one reference file.
Catalog catalog_with(const std::string& name, const std::string& references) {
  namespace fs = std::filesystem;
  const fs::path root =
      testing::scratch_data_dir(name, {"models", "hw_profiles", "workloads", "validation/calibration"});
  fs::create_directories(root / "validation" / "published");
  std::ofstream(root / "validation" / "published" / "refs.yaml") << "references:\n" << references;
  return Catalog(root.string());
}

struct RefusedReference {
  std::string references, field, message;
};
void expect_refused_at_load(const std::string& scratch, const std::vector<RefusedReference>& cases) {
  for (const RefusedReference& c : cases) {
    try {
      load_published_references(catalog_with(scratch, c.references));
      ADD_FAILURE() << "accepted: " << c.references;
    } catch (const InputError& e) {
      EXPECT_NE(e.where().field.find(c.field), std::string::npos) << e.where().field;
      EXPECT_GT(e.where().line, 0);
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
}

// The one reference in `references` loads but is refused when timed, at
// `field`, its message holding `message`.
void expect_refused_when_timed(const std::string& scratch, const std::string& references,
                               const std::string& field, const std::string& message) {
  const Catalog catalog = catalog_with(scratch, references);
  try {
    validate_reference(load_published_references(catalog).front(), catalog);
    ADD_FAILURE() << "accepted: " << references;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, field);
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

std::string attention_reference(const std::string& probe, const std::string& metric) {
  return "  - name: attention\n    source: \"test\"\n    gpu: h800\n    probe: {kind: attention, " + probe +
         "}\n    reference: {metric: " + metric + ", value: 1}\n    tolerance_pct: 10\n";
}

// The attention probe times the first attention kernel of the model's step:
// V3's dense MLA decode with 16 heads per GPU is bound by HBM, with all 128
// by the tensor cores, each at most its class's efficiency of the peak.
TEST(PublishedReference, AttentionProbeTimesTheModelsAttentionKernel) {
  const Catalog catalog = catalog_with(
      "v41sim_attention_reference",
      attention_reference("model: deepseek_v3, phase: decode, batch: 128, context: 8192, heads: 16", "gbps") +
          attention_reference("model: deepseek_v3, phase: decode, batch: 128, context: 8192", "tflops"));
  const auto refs = load_published_references(catalog);
  ASSERT_EQ(refs.size(), 2u);
  const GpuCostModel h800(catalog.data_dir(), catalog.resolve_gpu("h800"), false);
  const ClassCost& attention = h800.cost().params().of(KernelClass::kAttention);
  const double bandwidth_gbps =
      h800.gpu().hbm_bytes_per_s.value() / 1e9 * attention.memory_efficiency.value();
  const double memory_bound = validate_reference(refs[0], catalog).predicted;
  EXPECT_LE(memory_bound, bandwidth_gbps * 1.0001);
  EXPECT_GT(memory_bound, 0.8 * bandwidth_gbps);
  const double rate_tflops = h800.gpu().tensor.bf16_tflops.value() * attention.compute_efficiency.value();
  const double compute_bound = validate_reference(refs[1], catalog).predicted;
  EXPECT_LE(compute_bound, rate_tflops * 1.0001);
  EXPECT_GT(compute_bound, 0.8 * rate_tflops);
}

// V3.2's FP8 decode: a kernel whose two 64-head tiles per token each widen
// every entry runs slower than one that shares the widened entries, by at most
// the widening's share of its time; a larger top-k per tile runs faster.
TEST(PublishedReference, AttentionProbeSharesOrRepeatsTheWidening) {
  const std::string shape = "model: deepseek_v3_2, phase: decode, batch: 128, context: 32768";
  const Catalog catalog = catalog_with(
      "v41sim_attention_widening",
      attention_reference(shape, "tflops") +
          attention_reference(shape + ", widened_per_head_tile: 1", "tflops") +
          attention_reference("model: deepseek_v3_2, phase: decode, batch: 128, context: 65536, topk: 32768",
                              "tflops"));
  const auto refs = load_published_references(catalog);
  ASSERT_EQ(refs.size(), 3u);
  const double shared = validate_reference(refs[0], catalog).predicted;
  const double repeated = validate_reference(refs[1], catalog).predicted;
  EXPECT_LT(repeated, 0.8 * shared);
  EXPECT_GT(repeated, 0.4 * shared);
  EXPECT_GT(validate_reference(refs[2], catalog).predicted, shared);
}

// Each prior a bundled reference says it set is a field the priors have (or, named
// FILE:FIELD, a field of that file beside the references: a deployment's).
TEST(PublishedReference, NamedPriorsExist) {
  const Catalog catalog(V41SIM_SOURCE_DIR);
  const YamlNode priors =
      YamlNode::load_file(std::string(V41SIM_SOURCE_DIR) + "/validation/calibration/defaults.yaml");
  int named = 0;
  for (const PublishedReference& r : load_published_references(catalog)) {
    std::stringstream list(r.sets_prior);
    for (std::string item; std::getline(list, item, ',');) {
      item.erase(0, item.find_first_not_of(' '));
      // A field of a file beside the references (a deployment's), as --set names one.
      if (const std::size_t colon = item.find(".yaml:"); colon != std::string::npos) {
        const YamlNode file = YamlNode::load_file(std::string(V41SIM_SOURCE_DIR) + "/validation/published/" +
                                                  item.substr(0, colon + 5));
        EXPECT_TRUE(file.optional(item.substr(colon + 6)).has_value()) << r.name << ": " << item;
        ++named;
        continue;
      }
      const std::size_t dot = item.find('.');
      if (dot == std::string::npos) {  // a top-level prior
        EXPECT_TRUE(priors.optional(item).has_value()) << r.name << ": " << item;
        ++named;
        continue;
      }
      const std::string group = item.substr(0, dot), field = item.substr(dot + 1);
      const YamlNode owner =
          group == "links" ? priors.required("links") : priors.required("classes").required(group);
      EXPECT_TRUE(owner.optional(field).has_value()) << r.name << ": " << item;
      ++named;
    }
  }
  EXPECT_GT(named, 0);
}

TEST(BadPublishedReference, AttentionProbeFieldsAreChecked) {
  expect_refused_when_timed(
      "v41sim_bad_attention_heads",
      attention_reference("model: deepseek_v3, phase: decode, batch: 1, context: 8192, heads: 256", "tflops"),
      "probe.heads", "128");
  expect_refused_when_timed(
      "v41sim_bad_attention_topk",
      attention_reference("model: deepseek_v3, phase: decode, batch: 1, context: 8192, topk: 2048", "tflops"),
      "probe.topk", "no indexer");
  expect_refused_when_timed(
      "v41sim_bad_attention_queries",
      attention_reference(
          "model: deepseek_v3, phase: prefill, batch: 1, context: 8192, queries_per_sequence: 2", "tflops"),
      "probe.queries_per_sequence", "decode");
  expect_refused_at_load(
      "v41sim_bad_attention_fraction",
      {{attention_reference(
            "model: deepseek_v3, phase: decode, batch: 1, context: 8192, queries_per_sequence: 1.5",
            "tflops"),
        "probe.queries_per_sequence", "expected a whole number"}});
  const Catalog bad_phase = catalog_with(
      "v41sim_bad_attention_phase",
      attention_reference("model: deepseek_v3, phase: verify, batch: 1, context: 8192", "tflops"));
  try {
    load_published_references(bad_phase);
    FAIL() << "an unknown phase was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(e.where().field.find("phase"), std::string::npos) << e.where().field;
    EXPECT_NE(std::string(e.what()).find("decode or prefill"), std::string::npos) << e.what();
  }
}

// A reference's GPU meets the catalog only when it is timed: an unknown name
// is reported at the reference's own line, not as a --hw flag.
TEST(BadPublishedReference, AnUnknownGpuIsNamedAtItsLine) {
  const Catalog catalog = catalog_with(
      "v41sim_bad_reference_gpu",
      "  - name: attention\n    source: \"test\"\n    gpu: h801\n    probe: {kind: attention, model: "
      "deepseek_v3, phase: decode, batch: 1, context: 8192}\n    reference: {metric: tflops, value: 1}\n"
      "    tolerance_pct: 10\n");
  try {
    validate_reference(load_published_references(catalog).front(), catalog);
    FAIL() << "an unknown GPU was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(e.where().file.find("refs.yaml"), std::string::npos) << e.where().file;
    EXPECT_EQ(e.where().line, 4);
    EXPECT_EQ(e.where().field, "references[0].gpu");
    EXPECT_NE(std::string(e.what()).find("unknown name 'h801'"), std::string::npos) << e.what();
  }
}

// One reference in a reference file's YAML: its GPU, its probe's fields and its metric.
std::string whole_run_reference(const std::string& gpu, const std::string& probe, const std::string& metric) {
  return "  - name: whole run\n    source: \"test\"\n    gpu: " + gpu + "\n    probe: {" + probe +
         "}\n    reference: {metric: " + metric + ", value: 1000}\n    tolerance_pct: 15\n";
}

std::string step_reference(const std::string& gpu, const std::string& probe, const std::string& metric) {
  return whole_run_reference(gpu, "kind: step, model: deepseek_v3, " + probe, metric);
}

// A step probe is a serving engine's whole forward step, in tokens per
// second per node (per GPU times the node's GPUs) or per GPU; two
// micro-batches hide prefill's EP transfers; a skewed routing makes the
// busiest rank set it.
TEST(PublishedReference, StepProbeTimesAWholeStepPerNode) {
  const std::string prefill = "phase: prefill, batch: 2, context: 4096, ep: 32";
  const Catalog catalog = catalog_with(
      "v41sim_step_reference",
      step_reference("h800", prefill + ", gpus_per_node: 8", "tokens_per_s_per_node") +
          step_reference("h800", prefill + ", gpus_per_node: 4", "tokens_per_s_per_node") +
          step_reference("h800", prefill + ", gpus_per_node: 8, overlap: 1", "tokens_per_s_per_node") +
          step_reference("h800", prefill + ", gpus_per_node: 8, routing_skew: 1", "tokens_per_s_per_node") +
          step_reference(
              "h100_sxm",
              "phase: decode, batch: 64, context: 2000, ep: 72, gpus_per_node: 8, redundant_experts: 32",
              "tokens_per_s_per_node") +
          step_reference("h800", prefill, "tokens_per_s_per_gpu"));
  const auto refs = load_published_references(catalog);
  ASSERT_EQ(refs.size(), 6u);
  std::vector<double> tokens_per_s;
  for (const PublishedReference& r : refs) tokens_per_s.push_back(validate_reference(r, catalog).predicted);
  EXPECT_NEAR(tokens_per_s[1], tokens_per_s[0] / 2, 1e-9 * tokens_per_s[0]);
  EXPECT_GT(tokens_per_s[2], 1.2 * tokens_per_s[0]);
  EXPECT_LT(tokens_per_s[3], tokens_per_s[0]);
  // Decode counts a token a sequence: 64 sequences on 8 GPUs in well over a millisecond.
  EXPECT_GT(tokens_per_s[4], 0);
  EXPECT_LT(tokens_per_s[4], 64.0 * 8 / 1e-3);
  EXPECT_NEAR(tokens_per_s[5], tokens_per_s[0] / 8, 1e-9 * tokens_per_s[0]);
}

TEST(BadPublishedReference, StepProbeFieldsAreChecked) {
  const std::string decode = "phase: decode, batch: 64, context: 2000, gpus_per_node: 8";
  struct Case {
    std::string references;
    std::string field;
    std::string message;
  };
  const std::vector<Case> cases = {
      {step_reference("h800", decode + ", ep: 8", "us"), "reference.metric",
       "expected tokens_per_s_per_node or tokens_per_s_per_gpu"},
      // A per-node figure needs the node's GPUs; a per-GPU one does not use them, so naming them is refused.
      {step_reference("h800", "phase: decode, batch: 64, context: 2000, ep: 8", "tokens_per_s_per_node"),
       "probe.gpus_per_node", "required"},
      {step_reference("h800", decode + ", ep: 8", "tokens_per_s_per_gpu"), "probe.gpus_per_node",
       "not used by a tokens_per_s_per_gpu figure"},
      {step_reference("h800", decode + ", ep: 8, redundant_experts: 2.5", "tokens_per_s_per_node"),
       "probe.redundant_experts", "expected a whole number"},
      {step_reference("h800", decode + ", ep: 8, draft: 1", "tokens_per_s_per_node"), "probe.draft",
       "not a field of a 'step' probe"},
      {"  - name: gemm\n    source: \"test\"\n    gpu: h800\n    probe: {kind: gemm, m: 64, n: 64, k: 64, "
       "math: fp8}\n    reference: {metric: tokens_per_s_per_node, value: 1}\n    tolerance_pct: 10\n",
       "reference.metric", "expected tflops, gbps or us"},
  };
  for (const Case& c : cases) {
    const Catalog catalog = catalog_with("v41sim_bad_step_reference", c.references);
    try {
      load_published_references(catalog);
      ADD_FAILURE() << "accepted: " << c.references;
    } catch (const InputError& e) {
      EXPECT_NE(e.where().field.find(c.field), std::string::npos) << e.where().field;
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
  // EP 72 needs V3's 32 redundant replicas to deal its slots evenly: the probe's line says so.
  const Catalog uneven = catalog_with(
      "v41sim_bad_step_ep", step_reference("h100_sxm", decode + ", ep: 72", "tokens_per_s_per_node"));
  try {
    validate_reference(load_published_references(uneven).front(), uneven);
    ADD_FAILURE() << "EP 72 over 256 experts alone was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "probe.ep");
    EXPECT_GT(e.where().line, 0);
    EXPECT_NE(std::string(e.what()).find("32 redundant replicas would make 288 slots"), std::string::npos)
        << e.what();
  }
}

std::string grouped_reference(const std::string& extra) {
  return "  - name: grouped\n    source: \"test\"\n    gpu: h200\n    probe: {kind: grouped_gemm, groups: 8, "
         "m: 16, n: 4096, k: 7168" +
         extra + "}\n    reference: {metric: us, value: 50}\n    tolerance_pct: 10\n";
}

// References each refused as they load: at a line, with a field naming
// `field` and `message` in the text.
// A step probe on a tensor-parallel attention rank: the step one GPU of the
// rank runs, its rank's tokens shared by the rank's GPUs; the routed experts
// whole over them or split by columns, which times another step.
TEST(PublishedReference, StepProbeRunsATensorParallelRank) {
  const std::string decode = "phase: decode, batch: 64, context: 2000, ep: 8, attention_tp: 8";
  const Catalog catalog =
      catalog_with("v41sim_step_tp_reference",
                   step_reference("h800", decode, "tokens_per_s_per_gpu") +
                       step_reference("h800", decode + ", experts_by_columns: 1", "tokens_per_s_per_gpu"));
  const auto refs = load_published_references(catalog);
  ASSERT_EQ(refs.size(), 2u);
  const GpuCostModel h800(catalog.data_dir(), catalog.resolve_gpu("h800"), /*cuda_graph=*/true);
  const ModelAnalysis v3 = analyze_model(load_model_file(catalog.resolve_model("deepseek_v3")));
  StepShape shape;
  shape.phase = Phase::kDecode;
  shape.batch = 64;
  shape.context = 2000;
  shape.ep = 8;
  shape.ep_per_node = h800.gpu().nvlink_domain();
  shape.include_draft = false;
  shape.attention_tp = 8;
  const double step_s = time_step(build_step_graph(v3, shape), h800.cost()).total_us * 1e-6;
  const double whole_experts = validate_reference(refs[0], catalog).predicted;
  EXPECT_NEAR(whole_experts, 64.0 / 8 / step_s, 1e-9 * whole_experts);
  EXPECT_NE(validate_reference(refs[1], catalog).predicted, whole_experts);
}

// A step published as its time: the loader turns the readings' mean into
// the tokens per second per GPU it gives the step's tokens (a rank's over its
// GPUs), and refuses it beside a value or on another probe or metric.
TEST(PublishedReference, AStepsPublishedTimeGivesItsTokensPerGpu) {
  const std::string decode = "phase: decode, batch: 8, context: 2000, ep: 8, attention_tp: 8";
  const auto timed = [&](const std::string& reference) {
    return "  - name: timed\n    source: \"test\"\n    gpu: h800\n    probe: {kind: step, model: "
           "deepseek_v3, " +
           decode + "}\n    reference: {" + reference + "}\n    tolerance_pct: 15\n";
  };
  const Catalog catalog =
      catalog_with("v41sim_step_ms_reference", timed("metric: tokens_per_s_per_gpu, step_ms: [4.0, 6.0]"));
  const auto refs = load_published_references(catalog);
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_DOUBLE_EQ(refs[0].value, 8.0 / 8 / 5e-3);  // 8 sequences over 8 GPUs in the readings' 5 ms
  expect_refused_at_load(
      "v41sim_bad_step_ms_reference",
      {{timed("metric: tokens_per_s_per_gpu, value: 200, step_ms: [5.0]"), "reference.step_ms", "not both"},
       {timed("metric: tokens_per_s_per_gpu, step_ms: []"), "reference.step_ms", "one or more readings"},
       {timed("metric: tokens_per_s_per_gpu, step_ms: [5.0, -1]"), "reference.step_ms[1]", ""},
       {"  - name: gemm\n    source: \"test\"\n    gpu: h800\n    probe: {kind: gemm, m: 64, n: 64, k: 64, "
        "math: fp8}\n    reference: {metric: us, step_ms: [5.0]}\n    tolerance_pct: 10\n",
        "reference.step_ms", "only for a step probe's tokens_per_s_per_gpu"}});
}

// A rank the model cannot lay out is refused at the probe's line, naming the field.
TEST(BadPublishedReference, StepProbeTensorParallelFieldsAreChecked) {
  const std::string decode = "phase: decode, batch: 64, context: 2000";
  expect_refused_at_load(
      "v41sim_bad_step_tp_load",
      {{step_reference("h800", decode + ", ep: 8, attention_tp: 2.5", "tokens_per_s_per_gpu"),
        "probe.attention_tp", "expected a whole number"}});
  const std::vector<RefusedReference> refused_when_run = {
      {step_reference("h800", decode + ", ep: 8, attention_tp: 3", "tokens_per_s_per_gpu"),
       "probe.attention_tp", "divides DeepSeek-V3's 128 query heads"},
      {step_reference("h800", decode + ", ep: 16, attention_tp: 8, experts_by_columns: 1",
                      "tokens_per_s_per_gpu"),
       "probe.experts_by_columns", "its own EP group"},
      {step_reference("h800", decode + ", ep: 8, experts_by_columns: 1", "tokens_per_s_per_gpu"),
       "probe.experts_by_columns", "expected attention_tp of 2 or more"}};
  for (const RefusedReference& c : refused_when_run) {
    const Catalog catalog = catalog_with("v41sim_bad_step_tp_run", c.references);
    try {
      validate_reference(load_published_references(catalog).front(), catalog);
      ADD_FAILURE() << "accepted: " << c.references;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().field, c.field);
      EXPECT_GT(e.where().line, 0);
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
}

// A grouped GEMM's weights are FP8 unless the probe says fp4 (MXFP4: half the
// weight bytes, widened on Hopper's CUDA cores); another format, or the field
// on a probe kind without it, is refused with its line and field.
TEST(BadPublishedReference, GroupedGemmWeightsAreFp8OrFp4) {
  const Catalog catalog =
      catalog_with("v41sim_grouped_weights", grouped_reference("") + grouped_reference(", weights: fp8") +
                                                 grouped_reference(", weights: fp4"));
  const auto refs = load_published_references(catalog);
  ASSERT_EQ(refs.size(), 3u);
  const double fp8_default = validate_reference(refs[0], catalog).predicted;
  EXPECT_EQ(validate_reference(refs[1], catalog).predicted, fp8_default);
  // Memory-bound at 16 rows a group: half the weight bytes, plus their widening, in less time.
  const double fp4 = validate_reference(refs[2], catalog).predicted;
  EXPECT_LT(fp4, fp8_default);
  EXPECT_GT(fp4, fp8_default / 2);
  const std::vector<RefusedReference> cases = {
      {grouped_reference(", weights: fp6"), "probe.weights", "expected fp8 or fp4"},
      {"  - name: gemm\n    source: \"test\"\n    gpu: h800\n    probe: {kind: gemm, m: 64, n: 64, k: 64, "
       "math: fp8, weights: fp4}\n    reference: {metric: us, value: 1}\n    tolerance_pct: 10\n",
       "probe.weights", "not a field of a 'gemm' probe"},
  };
  expect_refused_at_load("v41sim_bad_grouped_weights", cases);
}

std::string mhc_reference(const std::string& probe, const std::string& metric = "us") {
  return "  - name: mhc\n    source: \"test\"\n    gpu: b200\n    probe: {kind: mhc, " + probe +
         "}\n    reference: {metric: " + metric + ", value: 100}\n    tolerance_pct: 10\n";
}

// An mhc probe times the very kernel a step of V4's three-kernel mHC runs:
// at V4-Flash's shape (4 streams of 4,096) and a prefill step's tokens, the
// pre-mix and the post-merge take the step's own time for them; in GB/s, the
// post-merge moves (2 x 4 + 1) x 4,096 BF16 values a token in that time.
TEST(PublishedReference, MhcProbeTimesTheStepsOwnMhcKernels) {
  const std::string shape = "tokens: 4096, streams: 4, hidden: 4096";
  const Catalog catalog =
      catalog_with("v41sim_mhc_reference", mhc_reference("kernel: pre_mix_norm, " + shape) +
                                               mhc_reference("kernel: post_merge, " + shape) +
                                               mhc_reference("kernel: post_merge, " + shape, "gbps"));
  const auto refs = load_published_references(catalog);
  ASSERT_EQ(refs.size(), 3u);
  const ModelAnalysis v4 = analyze_model(load_model_file(catalog.resolve_model("deepseek_v4_flash")));
  ASSERT_TRUE(v4.spec.mhc && !v4.spec.mhc->single_pass);
  ASSERT_EQ(v4.spec.hidden_size, 4096);
  StepShape step;
  step.phase = Phase::kPrefill;
  step.batch = 1;
  step.context = 4096;
  const GpuCostModel b200(catalog.data_dir(), catalog.resolve_gpu("b200"), false);
  const StepGraph graph = build_step_graph(v4, step);
  const StepTiming timing = time_step(graph, b200.cost());
  std::map<std::string, double> step_us;
  const auto& kernels = graph.layers[0].kernels();
  for (std::size_t i = 0; i < kernels.size(); ++i)
    step_us[kernels[i].name] = timing.layers[0].kernels[i].busy_us;
  ASSERT_EQ(step_us.count("attn_mhc_pre_mix_norm"), 1u);
  ASSERT_EQ(step_us.count("attn_mhc_post_merge"), 1u);
  EXPECT_DOUBLE_EQ(validate_reference(refs[0], catalog).predicted, step_us["attn_mhc_pre_mix_norm"]);
  const double post_us = validate_reference(refs[1], catalog).predicted;
  EXPECT_DOUBLE_EQ(post_us, step_us["attn_mhc_post_merge"]);
  EXPECT_NEAR(validate_reference(refs[2], catalog).predicted, 4096.0 * 9 * 4096 * 2 / post_us / 1e3, 1e-9);
}

TEST(BadPublishedReference, MhcProbeFieldsAreChecked) {
  const std::vector<RefusedReference> cases = {
      {mhc_reference("kernel: fused, tokens: 4096, streams: 4, hidden: 4096"), "probe.kernel",
       "expected pre_mix_norm or post_merge"},
      {mhc_reference("kernel: post_merge, tokens: 4096, streams: 4"), "hidden", "missing"},
      {mhc_reference("tokens: 4096, streams: 4, hidden: 4096"), "kernel", "missing"},
      {mhc_reference("kernel: post_merge, tokens: 409.6, streams: 4, hidden: 4096"), "probe.tokens",
       "expected a whole number"},
      {mhc_reference("kernel: post_merge, tokens: 4096, streams: 4, hidden: 4096, bytes: 8e9"), "probe.bytes",
       "not a field of a 'mhc' probe"},
  };
  expect_refused_at_load("v41sim_bad_mhc", cases);
}

std::string topk_reference(const std::string& probe) {
  return "  - name: topk\n    source: \"test\"\n    gpu: b200\n    probe: {kind: topk, " + probe +
         "}\n    reference: {metric: us, value: 10}\n    tolerance_pct: 10\n";
}

// A topk probe times the indexer's selection kernel (KernelFactory::topk): at
// least the class's fixed latency a select, no less for a longer row or more
// rows; a k past the row, a fractional or missing count is refused.
TEST(PublishedReference, TopkProbeTimesASelect) {
  const Catalog catalog =
      catalog_with("v41sim_topk_reference", topk_reference("rows: 1, length: 4096, k: 512") +
                                                topk_reference("rows: 1, length: 1048576, k: 512") +
                                                topk_reference("rows: 256, length: 1048576, k: 512"));
  const auto refs = load_published_references(catalog);
  ASSERT_EQ(refs.size(), 3u);
  const GpuCostModel b200(catalog.data_dir(), catalog.resolve_gpu("b200"), false);
  const auto& overhead = b200.cost().params().of(KernelClass::kTopK).fixed_overhead_us;
  ASSERT_TRUE(overhead.has_value());
  const double short_row = validate_reference(refs[0], catalog).predicted;
  const double long_row = validate_reference(refs[1], catalog).predicted;
  const double many_rows = validate_reference(refs[2], catalog).predicted;
  EXPECT_GE(short_row, overhead->value());
  EXPECT_GE(long_row, short_row);
  // 256 rows of 1M FP32 scores are 1 GB to read: the stream, not the latency, sets it.
  EXPECT_GT(many_rows, 10 * overhead->value());
  expect_refused_at_load("v41sim_bad_topk", {{topk_reference("rows: 1, length: 4096, k: 512.5"), "probe.k",
                                              "expected a whole number"},
                                             {topk_reference("rows: 1, length: 4096"), "k", "missing"}});
  expect_refused_when_timed("v41sim_bad_topk_k", topk_reference("rows: 1, length: 256, k: 512"), "probe.k",
                            "more values than a row holds");
}

std::string indexer_reference(const std::string& probe) {
  return "  - name: indexer\n    source: \"test\"\n    gpu: b200\n    probe: {kind: indexer, " + probe +
         "}\n    reference: {metric: us, value: 10}\n    tolerance_pct: 10\n";
}

// The step `shape` of `model` as a probe builds it on `gpu`: its EP over the GPU's NVLink domain.
StepGraph probe_step_graph(const ModelAnalysis& model, StepShape shape, const GpuCostModel& gpu) {
  shape.ep_per_node = gpu.gpu().nvlink_domain();
  return build_step_graph(model, shape);
}

// An indexer probe times the step's own first indexer logits kernel (V4-Flash's
// ratio-4 layer, 4 query tokens a sequence: the context over 4 keys each), the
// same time the step gives it; more query tokens fold more; a model without an
// indexer, query tokens in prefill and a fractional count are refused.
TEST(PublishedReference, IndexerProbeTimesTheStepsOwnLogits) {
  const std::string shape = "model: deepseek_v4_flash, phase: decode, batch: 64, context: 65536";
  const Catalog catalog =
      catalog_with("v41sim_indexer_reference", indexer_reference(shape + ", queries_per_sequence: 4") +
                                                   indexer_reference(shape + ", queries_per_sequence: 2"));
  const auto refs = load_published_references(catalog);
  ASSERT_EQ(refs.size(), 2u);
  const ModelAnalysis v4 = analyze_model(load_model_file(catalog.resolve_model("deepseek_v4_flash")));
  StepShape step;
  step.phase = Phase::kDecode;
  step.batch = 64;
  step.context = 65536;
  step.include_draft = false;
  step.decode_tokens_per_sequence = 4;
  const GpuCostModel b200(catalog.data_dir(), catalog.resolve_gpu("b200"), false);
  const StepGraph graph = probe_step_graph(v4, step, b200);
  const StepTiming timing = time_step(graph, b200.cost());
  double step_us = 0;
  for (std::size_t l = 0; l < graph.layers.size() && step_us == 0; ++l) {
    const auto& kernels = graph.layers[l].kernels();
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      if (kernels[i].kernel_class != KernelClass::kIndexer) continue;
      EXPECT_EQ(kernels[i].name, "indexer_logits");
      EXPECT_EQ(kernels[i].shape.n, 65536 / 4);  // the keys of a ratio-4 layer
      step_us = timing.layers[l].kernels[i].busy_us;
      break;
    }
  }
  ASSERT_GT(step_us, 0.0);
  EXPECT_DOUBLE_EQ(validate_reference(refs[0], catalog).predicted, step_us);
  EXPECT_GT(step_us, validate_reference(refs[1], catalog).predicted);
  expect_refused_at_load(
      "v41sim_bad_indexer",
      {{indexer_reference(shape + ", queries_per_sequence: 2.5"), "probe.queries_per_sequence",
        "expected a whole number"},
       {indexer_reference("model: deepseek_v4_flash, phase: decode, batch: 64"), "context", "missing"},
       {indexer_reference(shape + ", heads: 32"), "probe.heads", "not a field of a 'indexer' probe"}});
  expect_refused_when_timed(
      "v41sim_bad_indexer_prefill",
      indexer_reference("model: deepseek_v4_flash, phase: prefill, batch: 1, context: 8192, "
                        "queries_per_sequence: 2"),
      "probe.queries_per_sequence", "a decode step's query tokens");
  expect_refused_when_timed("v41sim_bad_indexer_model",
                            indexer_reference("model: deepseek_v3, phase: decode, batch: 1, context: 8192"),
                            "probe.model", "no indexer kernel");
  // A prefill chunk's new tokens: 1 to the context, in prefill only.
  for (const std::string& probe :
       {std::string("model: deepseek_v3_2, phase: prefill, batch: 1, context: 4096, new_tokens: 8192"),
        std::string("model: deepseek_v3_2, phase: decode, batch: 1, context: 4096, new_tokens: 1")}) {
    expect_refused_when_timed("v41sim_bad_indexer_new_tokens", indexer_reference(probe), "probe.new_tokens",
                              "1 to its context");
  }
  expect_refused_at_load("v41sim_bad_indexer_new_tokens_fraction",
                         {{indexer_reference("model: deepseek_v3_2, phase: prefill, batch: 1, context: 4096, "
                                             "new_tokens: 2048.5"),
                           "probe.new_tokens", "expected a whole number"},
                          {indexer_reference("model: deepseek_v3_2, phase: prefill, batch: 1, context: 4096, "
                                             "new_tokens: 0"),
                           "probe.new_tokens", "positive"}});
}

// A prefill probe's new tokens are the chunk the step computes, its queries
// the last of the context's keys: its logits kernel is the step's (the pairs
// a chunk of 2,048 over 4,096 keys sees, causal), timed alone.
TEST(PublishedReference, IndexerProbeTimesAPrefillChunk) {
  const Catalog catalog = catalog_with(
      "v41sim_indexer_prefill",
      indexer_reference("model: deepseek_v3_2, phase: prefill, batch: 1, context: 4096, new_tokens: 2048"));
  const auto refs = load_published_references(catalog);
  ASSERT_EQ(refs.size(), 1u);
  const ModelAnalysis v32 = analyze_model(load_model_file(catalog.resolve_model("deepseek_v3_2")));
  StepShape step = testing::shape(Phase::kPrefill, 1, 4096);
  step.new_tokens = 2048;
  const GpuCostModel b200(catalog.data_dir(), catalog.resolve_gpu("b200"), false);
  const StepGraph graph = probe_step_graph(v32, step, b200);
  const Kernel* logits = nullptr;
  for (const LayerKernels& layer : graph.layers) {
    for (const Kernel& k : layer.kernels())
      if (logits == nullptr && k.kernel_class == KernelClass::kIndexer) logits = &k;
  }
  ASSERT_NE(logits, nullptr);
  // The prefix's keys, then the chunk's up to each query's own (DeepGEMM's test counts
  // 2,048 x 2,049 / 2 of those; the step model half the chunk's square, 0.02% fewer pairs).
  const double pairs = 2048.0 * 2048.0 + 2048.0 * 2049.0 / 2.0;
  EXPECT_NEAR(logits->flops, 2.0 * 64 * 128 * pairs, 1e-3 * logits->flops);
  EXPECT_DOUBLE_EQ(validate_reference(refs[0], catalog).predicted, b200.cost().time(*logits).busy_us);
}

// A step probe's engine may store the indexer's keys in another of the model
// file's cache formats (FP8, as SGLang and vLLM do by default): the step is
// the model's with that key, its logits reading the wider keys; a format the
// model lacks, or a model without an indexer, is refused at the probe.
TEST(PublishedReference, StepProbeStoresTheEnginesIndexKeys) {
  const std::string decode =
      "kind: step, model: deepseek_v4_flash, phase: decode, batch: 16, context: 131072, ep: 8";
  const Catalog catalog = catalog_with(
      "v41sim_step_index_keys",
      whole_run_reference("h200", decode, "tokens_per_s_per_gpu") +
          whole_run_reference("h200", decode + ", index_key_cache: index_key_fp8", "tokens_per_s_per_gpu"));
  const auto refs = load_published_references(catalog);
  ASSERT_EQ(refs.size(), 2u);
  ModelSpec spec = load_model_file(catalog.resolve_model("deepseek_v4_flash"));
  spec.attention.indexer->key_cache = "index_key_fp8";
  const GpuCostModel h200(catalog.data_dir(), catalog.resolve_gpu("h200"), /*cuda_graph=*/true);
  StepShape shape = testing::shape(Phase::kDecode, 16, 131072);
  shape.ep = 8;
  shape.include_draft = false;
  const double step_s =
      time_step(probe_step_graph(analyze_model(spec), shape, h200), h200.cost()).total_us * 1e-6;
  const double fp8_keys = validate_reference(refs[1], catalog).predicted;
  EXPECT_NEAR(fp8_keys, 16.0 / step_s, 1e-9 * fp8_keys);
  EXPECT_LT(fp8_keys, validate_reference(refs[0], catalog).predicted)
      << "FP8 keys read more bytes than FP4 ones";
  expect_refused_when_timed(
      "v41sim_bad_step_index_keys",
      whole_run_reference("h200", decode + ", index_key_cache: index_key_int2", "tokens_per_s_per_gpu"),
      "probe.index_key_cache", "expected a cache format");
  expect_refused_when_timed(
      "v41sim_bad_step_index_keys_v3",
      step_reference("h800", "phase: decode, batch: 64, context: 2000, ep: 8, index_key_cache: index_key_fp8",
                     "tokens_per_s_per_gpu"),
      "probe.index_key_cache", "has no indexer");
  expect_refused_at_load(
      "v41sim_bad_index_keys_kind",
      {{indexer_reference("model: deepseek_v4_flash, phase: decode, batch: 1, context: 8192, "
                          "index_key_cache: index_key_fp8"),
        "probe.index_key_cache", "not a field of a 'indexer' probe"}});
}

std::string moe_layer_reference(const std::string& gpu, const std::string& extra,
                                const std::string& model = "deepseek_v3") {
  return "  - name: moe\n    source: \"test\"\n    gpu: " + gpu +
         "\n    probe: {kind: moe_layer, model: " + model + ", ep: 1, tokens_per_rank: 16" + extra +
         "}\n    reference: {metric: us, value: 1000}\n    tolerance_pct: 10\n";
}

// An MoE layer's probe takes the routed experts as the model stores them
// unless it says fp4, and their math as FP8 unless it says bf16 (a W4A16
// kernel such as Marlin's): FP4 experts read about half V3's FP8 bytes, and
// on H20, whose BF16 tensor rate is a seventh of H100's, widening them to
// BF16 for BF16 math takes longer than widening them to FP8. Another value
// is refused with its line and field.
TEST(BadPublishedReference, MoeLayerProbeTakesTheExpertsWeightsAndMath) {
  const Catalog catalog = catalog_with(
      "v41sim_moe_probe", moe_layer_reference("h200", "") + moe_layer_reference("h200", ", weights: fp4") +
                              moe_layer_reference("h20", ", weights: fp4") +
                              moe_layer_reference("h20", ", weights: fp4, math: fp8") +
                              moe_layer_reference("h20", ", weights: fp4, math: bf16"));
  const auto refs = load_published_references(catalog);
  ASSERT_EQ(refs.size(), 5u);
  std::vector<double> us;
  for (const auto& r : refs) us.push_back(validate_reference(r, catalog).predicted);
  EXPECT_LT(us[1], us[0] * 0.75) << "FP4 experts read about half the bytes of V3's FP8 ones";
  EXPECT_EQ(us[3], us[2]) << "fp8 math is the default";
  EXPECT_GT(us[4], us[2] * 1.2) << "W4A16 on H20: widening to BF16 and BF16 math";
  const std::vector<RefusedReference> cases = {
      {moe_layer_reference("h20", ", math: int8"), "probe.math", "expected fp8 or bf16"},
      {moe_layer_reference("h20", ", weights: int4"), "probe.weights", "expected fp8 or fp4"},
      {"  - name: a transfer\n    source: \"test\"\n    gpu: h200\n    probe: {kind: all_to_all, tokens: "
       "128, "
       "hidden: 7168, top_k: 8, ep: 8, ep_per_node: 8, bytes_per_value: 1, math: bf16}\n"
       "    reference: {metric: us, value: 80}\n    tolerance_pct: 10\n",
       "probe.math", "not a field of a 'all_to_all' probe"},
  };
  expect_refused_at_load("v41sim_bad_moe_probe", cases);
  // A benchmark's own MoE shape over the model's layer (Mixtral's: 8 experts,
  // hidden 4096, width 14336, top-2) times other kernels than the model's own.
  const Catalog reshaped = catalog_with(
      "v41sim_moe_reshaped", moe_layer_reference("h20", ", weights: fp4, math: bf16") +
                                 moe_layer_reference("h20",
                                                     ", weights: fp4, math: bf16, experts: 8, top_k: 2, "
                                                     "hidden: 4096, width: 14336"));
  const auto reshaped_refs = load_published_references(reshaped);
  ASSERT_EQ(reshaped_refs.size(), 2u);
  EXPECT_NE(validate_reference(reshaped_refs[0], reshaped).predicted,
            validate_reference(reshaped_refs[1], reshaped).predicted);
  expect_refused_at_load(
      "v41sim_bad_moe_shape",
      {{moe_layer_reference("h20", ", experts: 8.5"), "probe.experts", "expected a whole number"},
       {moe_layer_reference("h20", ", width: -1"), "probe.width", ""}});
  const Catalog too_many =
      catalog_with("v41sim_moe_top_k", moe_layer_reference("h20", ", experts: 4, top_k: 8"));
  try {
    validate_reference(load_published_references(too_many)[0], too_many);
    ADD_FAILURE() << "top-8 of 4 experts was timed";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "probe.top_k");
  }
  // A model without MoE layers has nothing for the probe to time: refused, not 0 us.
  const Catalog dense =
      catalog_with("v41sim_dense_moe_probe", moe_layer_reference("h20", "", "llama_3_1_405b"));
  const auto dense_refs = load_published_references(dense);
  ASSERT_EQ(dense_refs.size(), 1u);
  try {
    validate_reference(dense_refs[0], dense);
    ADD_FAILURE() << "a moe_layer probe of a dense model was timed";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "probe.model");
    EXPECT_GT(e.where().line, 0);
    EXPECT_NE(std::string(e.what()).find("no MoE layer"), std::string::npos) << e.what();
  }
}

// The bundled benchmark's files (SGLang's recipe on 4 x H200 and its client), by path.
const std::string kServingDir = std::string(V41SIM_SOURCE_DIR) + "/validation/published/serving/";
const std::string kRecipe = kServingDir + "sglang_h200_4_dp_attention.yaml";
const std::string kBenchmark = kServingDir + "sglang_bench_random_8k_1k.yaml";

std::string serving_reference(const std::string& gpu, const std::string& probe, const std::string& metric) {
  return whole_run_reference(
      gpu,
      "kind: serving, model: deepseek_v4_flash, deployment: " + kRecipe + ", workload: " + kBenchmark + probe,
      metric);
}

// A serving probe runs the benchmark it names to its last prompt: its
// figures are the run's means over the benchmark's requests and its tokens
// over its own span; FP8 experts read twice the FP4 ones' bytes and serve
// fewer tokens a second; more clients wait longer for their first token; FP8
// index keys are the model's run with that key.
TEST(PublishedReference, ServingProbeRunsTheBenchmarkToItsLastPrompt) {
  const std::string small = ", concurrency: 64, prompts: 128";
  const Catalog catalog = catalog_with(
      "v41sim_serving_reference",
      serving_reference("h200", small + ", weights: fp8", "tokens_per_s_per_gpu") +
          serving_reference("h200", small, "tokens_per_s_per_gpu") +
          serving_reference("h200", small + ", weights: fp8", "tpot_ms") +
          serving_reference("h200", small + ", weights: fp8", "ttft_ms") +
          serving_reference("h200", ", concurrency: 128, prompts: 128, weights: fp8", "ttft_ms") +
          serving_reference("h200", small + ", weights: fp8", "ttft_p50_ms") +
          serving_reference("h200", small + ", weights: fp8, input_tokens: 8192", "ttft_ms") +
          serving_reference("h200", small + ", weights: fp8, index_key_cache: index_key_fp8", "tpot_ms"));
  const auto refs = load_published_references(catalog);
  ASSERT_EQ(refs.size(), 8u);
  std::vector<double> predicted;
  for (const auto& r : refs) predicted.push_back(validate_reference(r, catalog).predicted);
  EXPECT_LT(predicted[0], predicted[1]) << "FP8 experts against FP4 ones";
  EXPECT_GT(predicted[2], 0);
  EXPECT_GT(predicted[4], predicted[3]) << "all 128 at once queue longer than 64 at a time";
  EXPECT_GT(predicted[6], predicted[3])
      << "every prompt its longest, 8192 tokens, waits longer for its first token";
  // The same benchmark, the same figure.
  EXPECT_EQ(validate_reference(refs[0], catalog).predicted, predicted[0]);
  // The figures are the benchmark run itself, measured from empty to its last prompt.
  ModelSpec spec = load_model_file(catalog.resolve_model("deepseek_v4_flash"));
  spec.weights.routed_experts = {ElementFormat::kFp8E4M3, std::nullopt, 0};
  const ModelAnalysis model = analyze_model(spec);
  WorkloadSpec workload = load_workload_file(kBenchmark);
  workload = at_concurrency(workload, 64, {"", 0, "test"});
  workload.prompts = 128;
  ServeOptions options;
  options.warm_up_s = 0;
  options.duration_s = 3600;
  const ServedRun run = serve_deployment(catalog, model, load_deployment_file(kRecipe), workload, options);
  ASSERT_TRUE(run.result.window_ends_with_prompts);
  EXPECT_EQ(run.result.arrived, 128);
  EXPECT_NEAR(predicted[0], run.result.input_tokens_per_s_per_gpu + run.result.output_tokens_per_s_per_gpu,
              1e-9 * predicted[0]);
  EXPECT_NEAR(predicted[2], run.result.tpot_ms.mean, 1e-9 * predicted[2]);
  EXPECT_NEAR(predicted[3], run.result.ttft_ms.mean, 1e-9 * predicted[3]);
  EXPECT_NEAR(predicted[5], run.result.ttft_ms.p50, 1e-9 * predicted[5]);
  // The engine's FP8 index keys: the same benchmark on the model with that key.
  spec.attention.indexer->key_cache = "index_key_fp8";
  const ServedRun fp8_keys =
      serve_deployment(catalog, analyze_model(spec), load_deployment_file(kRecipe), workload, options);
  EXPECT_NEAR(predicted[7], fp8_keys.result.tpot_ms.mean, 1e-9 * predicted[7]);
  EXPECT_NE(predicted[7], predicted[2]);
}

// A benchmark's throughput published for the whole deployment: its total over
// the GPUs it ran on, a GPU's share kept; a deployment of another size is
// refused at the reference's gpus, and the fields only go together.
TEST(PublishedReference, ADeploymentsTotalThroughputIsSharedOverItsGpus) {
  const auto with = [](std::string reference, const std::string& figure) {
    return reference.replace(reference.find("value: 1000"), 11, figure);
  };
  const std::string small = ", concurrency: 64, prompts: 128";
  const std::string per_gpu = serving_reference("h200", small, "tokens_per_s_per_gpu");
  const Catalog catalog = catalog_with("v41sim_serving_total", with(per_gpu, "total: 4000, gpus: 4"));
  const auto refs = load_published_references(catalog);
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_DOUBLE_EQ(refs[0].value, 1000.0);
  EXPECT_GT(validate_reference(refs[0], catalog).predicted, 0);  // the recipe's 4 GPUs
  const Catalog eight = catalog_with("v41sim_serving_total_8", with(per_gpu, "total: 8000, gpus: 8"));
  try {
    validate_reference(load_published_references(eight).front(), eight);
    ADD_FAILURE() << "a total over 8 GPUs was set against a 4-GPU deployment";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "references[0].reference.gpus");
    EXPECT_NE(std::string(e.what()).find("ran on 8 GPUs, where the deployment has 4"), std::string::npos)
        << e.what();
  }
  expect_refused_at_load(
      "v41sim_bad_serving_total",
      {{with(per_gpu, "value: 1000, total: 4000, gpus: 4"), "reference.total", "not both"},
       {with(per_gpu, "total: 4000"), "reference.gpus", "required"},
       {with(per_gpu, "value: 1000, gpus: 4"), "reference.gpus", "which the reference does not give"},
       {with(serving_reference("h200", small, "tpot_ms"), "total: 4000, gpus: 4"), "reference.total",
        "only for a serving probe's tokens_per_s_per_gpu"}});
}

TEST(BadPublishedReference, ServingProbeFieldsAreChecked) {
  expect_refused_at_load(
      "v41sim_bad_serving_probe",
      {{serving_reference("h200", "", "us"), "reference.metric",
        "expected ttft_ms, ttft_p50_ms, tpot_ms or tokens_per_s_per_gpu"},
       {serving_reference("h200", ", prompts: 2.5", "tpot_ms"), "probe.prompts", "expected a whole number"},
       {serving_reference("h200", ", input_tokens: 100.5", "tpot_ms"), "probe.input_tokens",
        "expected a whole number"},
       {serving_reference("h200", ", batch: 4", "tpot_ms"), "probe.batch",
        "not a field of a 'serving' probe"},
       {serving_reference("h200", ", weights: int4", "tpot_ms"), "probe.weights", "expected fp8 or fp4"},
       {"  - name: b\n    source: \"t\"\n    gpu: h200\n    probe: {kind: serving, model: deepseek_v4_flash, "
        "workload: chat}\n    reference: {metric: tpot_ms, value: 1}\n    "
        "tolerance_pct: 15\n",
        "probe.deployment", "required"}});
  // What only running it finds, said at the reference's line: a deployment or
  // workload not there, one not of the reference's GPU, a workload that is no
  // benchmark (an open loop, or a loop without a prompt count).
  const auto refused_when_run = [](const std::string& reference, const std::string& field,
                                   const std::string& message) {
    const Catalog catalog = catalog_with("v41sim_bad_serving_run", reference);
    try {
      validate_reference(load_published_references(catalog).front(), catalog);
      ADD_FAILURE() << "ran: " << reference;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().field, field) << e.what();
      EXPECT_GT(e.where().line, 0);
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  // The benchmark's reference with one of its files named otherwise.
  const auto naming = [](const std::string& file, const std::string& instead) {
    std::string reference = serving_reference("h200", "", "tpot_ms");
    return reference.replace(reference.find(file), file.size(), instead);
  };
  refused_when_run(naming(kRecipe, "no_such_deployment"), "probe.deployment",
                   "unknown name 'no_such_deployment'");
  refused_when_run(naming(kRecipe, "serving/none.yaml"), "probe.deployment", "no file at ");
  refused_when_run(serving_reference("h100_sxm", "", "tpot_ms"), "references[0].gpu",
                   "runs on h200, not on the reference's h100_sxm");
  refused_when_run(naming(kBenchmark, "chat"), "probe.workload", "expected a closed loop");
  refused_when_run(naming(kBenchmark, "bench_random_8k_1k"), "probe.prompts", "expected a prompt count");
}

}  // namespace
}  // namespace v41sim
