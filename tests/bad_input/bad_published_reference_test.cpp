// Published references: a probe field its kind does not have is refused with
// file, line and field, not silently ignored; the attention probe's fields are
// checked, and it times the model's own attention kernel.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/common/catalog.h"
#include "sim/common/input_error.h"
#include "sim/common/yaml_reader.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/validation/published_reference.h"
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

// A data folder with the bundled models and GPU profiles and one reference file.
Catalog catalog_with(const std::string& name, const std::string& references) {
  namespace fs = std::filesystem;
  const fs::path root = testing::scratch_data_dir(name, {"models", "hw_profiles", "validation/calibration"});
  fs::create_directories(root / "validation" / "published");
  std::ofstream(root / "validation" / "published" / "refs.yaml") << "references:\n" << references;
  return Catalog(root.string());
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

// Each prior a bundled reference says it set is a field the priors have.
TEST(PublishedReference, NamedPriorsExist) {
  const Catalog catalog(V41SIM_SOURCE_DIR);
  const YamlNode priors =
      YamlNode::load_file(std::string(V41SIM_SOURCE_DIR) + "/validation/calibration/defaults.yaml");
  int named = 0;
  for (const PublishedReference& r : load_published_references(catalog)) {
    std::stringstream list(r.sets_prior);
    for (std::string item; std::getline(list, item, ',');) {
      item.erase(0, item.find_first_not_of(' '));
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
  const Catalog too_many =
      catalog_with("v41sim_bad_attention_heads",
                   attention_reference(
                       "model: deepseek_v3, phase: decode, batch: 1, context: 8192, heads: 256", "tflops"));
  try {
    validate_reference(load_published_references(too_many).front(), too_many);
    FAIL() << "more heads than the model has were accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "probe.heads");
    EXPECT_NE(std::string(e.what()).find("128"), std::string::npos) << e.what();
  }
  const Catalog no_indexer =
      catalog_with("v41sim_bad_attention_topk",
                   attention_reference(
                       "model: deepseek_v3, phase: decode, batch: 1, context: 8192, topk: 2048", "tflops"));
  try {
    validate_reference(load_published_references(no_indexer).front(), no_indexer);
    FAIL() << "a top-k for a model without an indexer was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "probe.topk");
    EXPECT_NE(std::string(e.what()).find("no indexer"), std::string::npos) << e.what();
  }
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

}  // namespace
}  // namespace v41sim
