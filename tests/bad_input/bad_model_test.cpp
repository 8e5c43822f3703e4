// Every kind of bad model file gets one InputError naming file, line and field.
#include <gtest/gtest.h>

#include <string>

#include "sim/model/model_loader.h"
#include "tests/test_data.h"

namespace v41sim {
namespace {

const std::string kGood = testing::read_text(testing::model_path("deepseek_v4_1_flash"));

int line_of(const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

std::string replaced(const std::string& from, const std::string& to) {
  std::string text = kGood;
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "test setup: '" << from << "' not in the model file";
  return text.replace(at, from.size(), to);
}

InputError load_error(const std::string& text) {
  try {
    load_model(YamlNode::parse_string(text, "bad.yaml"));
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "the file loaded without error";
  return InputError({}, "");
}

struct BadCase {
  const char* name;
  const char* from;
  const char* to;
  const char* field;    // expected field path
  const char* message;  // expected part of the message
  const char* line_at;  // text whose line the error must name ("" = do not check)
};

// Printed as its name (its edit may span lines), not as the bytes of its pointers.
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class BadModel : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadModel, NamesFileLineAndField) {
  const BadCase& c = GetParam();
  const std::string text = replaced(c.from, c.to);
  const InputError e = load_error(text);
  EXPECT_EQ(e.where().file, "bad.yaml");
  EXPECT_EQ(e.where().field, c.field) << e.what();
  EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
  EXPECT_GT(e.where().line, 0) << e.what();
  if (*c.line_at != '\0') {
    EXPECT_EQ(e.where().line, line_of(text, c.line_at)) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllCases, BadModel,
    ::testing::Values(
        BadCase{"malformed", "hidden_size: 5120", "hidden_size: [5120", "", "malformed YAML", ""},
        BadCase{"missing_field", "vocab_size: 129280\n", "", "vocab_size", "required field is missing", ""},
        BadCase{"unknown_field", "vocab_size: 129280\n", "vocab_size: 129280\nvocab_sise: 1\n", "vocab_sise",
                "unknown field", "vocab_sise"},
        BadCase{"wrong_type", "num_layers: 40", "num_layers: forty", "num_layers", "expected an integer",
                "num_layers: forty"},
        // A key given twice: yaml-cpp would keep the first, and an edit of the second would change nothing.
        BadCase{"repeated_key", "vocab_size: 129280\n", "vocab_size: 129280\nvocab_size: 1000\n",
                "vocab_size", "given twice in one map", "vocab_size: 1000"},
        BadCase{"repeated_key_in_a_flow_map", "dtype: fp4_e2m1, scale_dtype: e4m3, scale_group: 16",
                "dtype: fp4_e2m1, scale_dtype: e4m3, scale_group: 16, scale_group: 32",
                "cache_formats.main_kv_mxfp4.parts[0].scale_group", "given twice",
                "scale_group: 16, scale_group: 32"},
        BadCase{"negative_size", "hidden_size: 5120", "hidden_size: -5120", "hidden_size",
                "expected a positive integer", "hidden_size: -5120"},
        BadCase{"zero_size", "top_k: 6", "top_k: 0", "moe.top_k", "expected a positive integer", "top_k: 0"},
        // Dimensions past any model (a typo in another unit) would overflow the counts derived from them.
        BadCase{"vocabulary_past_any_model", "vocab_size: 129280", "vocab_size: 1e15", "vocab_size",
                "expected at most 16777216 (tokens in a vocabulary), got 1000000000000000",
                "vocab_size: 1e15"},
        BadCase{"width_past_any_model", "expert_intermediate: 2304", "expert_intermediate: 2304000000",
                "moe.expert_intermediate", "expected at most 131072", "expert_intermediate: 2304000000"},
        BadCase{"window_past_any_model", "sliding_window: 128", "sliding_window: 1000000000",
                "attention.sliding_window", "expected at most 1048576", "sliding_window: 1000000000"},
        BadCase{"draft_top_k_past_its_experts", "top_k: 3", "top_k: 1000000", "draft.top_k",
                "expected 1..128 (the draft's routed_experts), got 1000000", "top_k: 1000000"},
        BadCase{"rope_wider_than_the_head", "rope_dim: 64", "rope_dim: 600", "attention.rope_dim",
                "expected at most head_dim (512) rotary dims, got 600", "rope_dim: 600"},
        BadCase{"layer_id_out_of_range", "kv_source_layer_ids: [2, 8, 14, 20]",
                "kv_source_layer_ids: [2, 8, 14, 40]", "attention.kv_source_layer_ids[3]", "out of range",
                "kv_source_layer_ids"},
        BadCase{"ratio_list_too_short", "compress_ratios: [0, 0,\n", "compress_ratios: [0,\n",
                "attention.compress_ratios", "expected 40 entries", "compress_ratios: ["},
        BadCase{"unknown_dtype", "{of: latent, dtype: fp4_e2m1, scale_dtype: e4m3",
                "{of: latent, dtype: fp6_e3m2, scale_dtype: e4m3",
                "cache_formats.main_kv_mxfp4.parts[0].dtype", "unknown element format", ""},
        BadCase{"scale_group_not_whole", "dtype: fp4_e2m1, scale_dtype: e4m3, scale_group: 16",
                "dtype: fp4_e2m1, scale_dtype: e4m3, scale_group: 24", "cache_formats.main_kv_mxfp4.parts[0]",
                "whole scale groups", ""},
        BadCase{"missing_cache_format", "main_cache: main_kv_mxfp4", "main_cache: main_kv_fp2",
                "attention.main_cache", "which cache_formats lacks", "main_cache: main_kv_fp2"},
        BadCase{"kv_source_ratio_mismatch", "kv_source_layer_ids: [2, 8, 14, 20]",
                "kv_source_layer_ids: [2, 8, 14]", "attention.kv_source_layer_ids", "ratios must match",
                "kv_source_layer_ids"},
        BadCase{"window_only_kv_source", "kv_source_layer_ids: [2, 8, 14, 20]",
                "kv_source_layer_ids: [1, 2, 8, 14, 20]", "attention.kv_source_layer_ids",
                "cannot be a KV source", "kv_source_layer_ids"},
        BadCase{"unknown_role", "reindex: Reindex", "re_index: Reindex", "attention.mode_labels.re_index",
                "unknown layer role", ""},
        BadCase{"unlabelled_role", "reindex: Reindex, ", "", "attention.mode_labels", "does not name", ""},
        BadCase{"unknown_kv_projection", "kv_projection: shared_latent", "kv_projection: latent",
                "attention.kv_projection", "expected one of", "kv_projection: latent"},
        BadCase{"engram_layer_out_of_range", "layers: [1, 14]", "layers: [1, 99]", "engram.layers[1]",
                "out of range", "layers: [1, 99]"},
        // The draft's acceptance: per position or a step's measured mean yield, one of them, and a
        // mean a step of its drafts can yield.
        BadCase{"draft_acceptance_both_ways", "  acceptance_length_drafts: 5",
                "  acceptance_length_drafts: 5\n  acceptance: {value: 0.8, assumed: \"x\"}",
                "draft.acceptance_length", "not both", "acceptance_length: {"},
        BadCase{
            "draft_mean_yield_past_its_drafts", "acceptance_length: {value: 3.51",
            "acceptance_length: {value: 6.5", "draft.acceptance_length",
            "expected a step's mean tokens between 1 and 6 (the verifier's token and 5 drafts), exclusive, "
            "got 6.5",
            "acceptance_length: {"},
        BadCase{"draft_mean_yield_of_no_draft", "acceptance_length: {value: 3.51",
                "acceptance_length: {value: 1", "draft.acceptance_length", "exclusive, got 1",
                "acceptance_length: {"},
        BadCase{"draft_mean_yield_without_its_drafts", "  acceptance_length_drafts: 5\n", "",
                "draft.acceptance_length_drafts", "required", ""},
        BadCase{"draft_mean_yield_past_the_block", "acceptance_length_drafts: 5",
                "acceptance_length_drafts: 6", "draft.acceptance_length_drafts",
                "expected 1..5 drafts a step (the draft's block_size), got 6", "acceptance_length_drafts: 6"},
        BadCase{"draft_drafts_without_a_mean_yield", "  acceptance_length: {value: 3.51, published: ",
                "  acceptance: {value: 0.8, assumed: ", "draft.acceptance_length_drafts",
                "a step's drafts for acceptance_length, which the draft does not give",
                "acceptance_length_drafts: 5"}),
    [](const ::testing::TestParamInfo<BadCase>& param) { return std::string(param.param.name); });

TEST(BadModelFile, MissingFileIsAnInputError) {
  try {
    load_model_file("/nonexistent/model.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "/nonexistent/model.yaml");
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos);
  }
}

TEST(BadModelFile, TheGoodFileLoads) {
  EXPECT_NO_THROW(load_model(YamlNode::parse_string(kGood, "good.yaml")));
}

}  // namespace
}  // namespace v41sim
