#include "sim/report/engine_choices_view.h"

#include <fmt/format.h>

#include <deque>
#include <iterator>
#include <string>
#include <vector>

#include "sim/cost/draft_choice.h"
#include "sim/cost/step_cost.h"
#include "sim/graph/step_graph.h"
#include "sim/report/model_views.h"

namespace v41sim {
namespace {

struct EngineChoice {
  const char* label;   // the table's row
  const char* key;     // the JSON's
  const char* phrase;  // what the engine has instead, in the answers in brief ("" for the assumed)
  EngineChoices engine;
};

constexpr EngineChoice kChoices[] = {
    {"as assumed: a sequence's queries share its index keys; a Reindex layer scores its pool alone; the "
     "routed experts in FP8 math (W4A8); mHC as the model file says (V4.1: one pass a block)",
     "assumed",
     "",
     {}},
    {"index keys read once a query (--index-keys-per-query)",
     "index_keys_per_query",
     "a sequence's drafts reading its index keys apart",
     {.draft_queries_share_index_keys = false}},
    {"a Reindex layer scores every position (--reindex-scores-every-position)",
     "reindex_every_position",
     "Reindex layers scoring every position",
     {.reindex_scores_pool_only = false}},
    {"both indexer choices",
     "both",
     "both indexer choices",
     {.draft_queries_share_index_keys = false, .reindex_scores_pool_only = false}},
    {"the routed experts in BF16 math, W4A16 (--experts-bf16)",
     "experts_bf16",
     "the routed experts in BF16 math (W4A16)",
     {.experts_bf16_math = true}},
    {"all three",
     "all_three",
     "all three",
     {.draft_queries_share_index_keys = false, .reindex_scores_pool_only = false, .experts_bf16_math = true}},
    {"mHC as V4's three kernels (--mhc three-kernel)",
     "mhc_three_kernel",
     "mHC as V4's three kernels",
     {.mhc_form = MhcForm::kThreeKernel}},
};

// A row of the table: an engine choice, or the model's index keys stored in
// another format its file defines (the FP8 key engines without an FP4
// indexer store), each on the model it runs.
struct Variant {
  std::string label, key, phrase;
  EngineChoices engine;
  const ModelAnalysis* model;
};

// The choices on `model`, then each other index-key format on the model
// re-analysed with it (kept in `keyed`, whose elements stay put).
std::vector<Variant> variants(const ModelAnalysis& model, std::deque<ModelAnalysis>& keyed) {
  std::vector<Variant> out;
  for (const EngineChoice& c : kChoices) out.push_back({c.label, c.key, c.phrase, c.engine, &model});
  for (const std::string& format : other_index_key_formats(model.spec)) {
    keyed.push_back(analyze_with_index_keys(model.spec, format));
    out.push_back({"index keys stored as " + index_key_format_text(model.spec, format, false) +
                       "; `kv` says who stores them",
                   "index_keys_" + format, "its index keys stored as " + format, EngineChoices{},
                   &keyed.back()});
  }
  return out;
}

// One prompt's prefill under each variant, beside the decode columns.
void add_prefill_column(const std::vector<Variant>& variants, const KernelCostModel& cost, int64_t ep,
                        int64_t context, std::vector<std::vector<std::string>>& rows, nlohmann::json& json) {
  json["prefill_rows"] = nlohmann::json::array();
  double assumed_us = 0;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    StepShape shape;
    shape.phase = Phase::kPrefill;
    shape.batch = 1;
    shape.context = context;
    shape.ep = ep;
    shape.ep_per_node = cost.gpu().nvlink_domain();
    shape.engine = variants[i].engine;
    const double step_us = time_step(build_step_graph(*variants[i].model, shape), cost).total_us;
    if (i == 0) assumed_us = step_us;
    std::string cell = fmt::format("{:.2f} s", step_us / 1e6);
    if (i > 0) cell += fmt::format(" ({:+.1f}%)", 100.0 * (step_us / assumed_us - 1.0));
    rows[i].push_back(std::move(cell));
    json["prefill_rows"].push_back({{"choice", variants[i].key},
                                    {"phrase", variants[i].phrase},
                                    {"context", context},
                                    {"step_us", step_us},
                                    {"change_pct", 100.0 * (step_us / assumed_us - 1.0)}});
  }
}

}  // namespace

Table engine_choices_table(const ModelAnalysis& model, const KernelCostModel& cost, const StepShape& decode,
                           const std::vector<int64_t>& contexts, int64_t prefill_context,
                           const std::string& gpu_name, nlohmann::json& json) {
  std::vector<std::string> headers{"the engine's kernels"};
  for (const int64_t context : contexts) headers.push_back(fmt::format("{} tokens", context));
  if (prefill_context > 0) headers.push_back(fmt::format("prefill, one {}-token prompt", prefill_context));
  Table table(
      fmt::format("What three kernels engines may lack, and the index keys they store, change: the {} "
                  "decode step, batch {}, EP {}",
                  gpu_name, decode.batch, decode.ep),
      headers);
  std::deque<ModelAnalysis> keyed;
  const std::vector<Variant> rows_of = variants(model, keyed);
  std::vector<std::vector<std::string>> rows(rows_of.size());
  for (std::size_t i = 0; i < rows_of.size(); ++i) rows[i].push_back(rows_of[i].label);
  json = {{"gpu", gpu_name}, {"batch", decode.batch}, {"rows", nlohmann::json::array()}};
  for (const int64_t context : contexts) {
    double assumed_token_us = 0;
    for (std::size_t i = 0; i < rows_of.size(); ++i) {
      StepShape shape = decode;
      shape.context = context;
      shape.engine = rows_of[i].engine;
      const ModelAnalysis& m = *rows_of[i].model;
      const SpeculativeStep served = as_served(m, shape, cost);
      const double step_us = time_step(build_step_graph(m, served.shape), cost).total_us;
      const double token_us = step_us / served.choice.tokens_per_sequence;
      if (i == 0) assumed_token_us = token_us;
      std::string cell = fmt::format("{:.1f} ms, {} drafts: {:.1f} ms a token", step_us / 1e3,
                                     served.choice.drafts, token_us / 1e3);
      if (i > 0) cell += fmt::format(" ({:+.1f}%)", 100.0 * (token_us / assumed_token_us - 1.0));
      rows[i].push_back(std::move(cell));
      json["rows"].push_back({{"choice", rows_of[i].key},
                              {"phrase", rows_of[i].phrase},
                              {"context", context},
                              {"drafts", served.choice.drafts},
                              {"step_us", step_us},
                              {"us_per_output_token", token_us},
                              {"change_pct", 100.0 * (token_us / assumed_token_us - 1.0)}});
    }
  }
  if (prefill_context > 0) add_prefill_column(rows_of, cost, decode.ep, prefill_context, rows, json);
  for (std::vector<std::string>& row : rows) table.add_row(std::move(row));
  table.add_note(
      "a step verifying the drafts a serving run would choose with those kernels (the count that gives "
      "the most expected tokens a second), and its time over the tokens a sequence can expect from it");
  table.add_note(kDraftIndexKeysShared);
  table.add_note(kReindexScoresPool);
  table.add_note(kExpertsFp8Math);
  if (!keyed.empty()) {
    const std::string& own = model.spec.attention.indexer->key_cache;
    table.add_note(fmt::format(
        "the index keys as the model file stores them ({}, {} B a key); each other key format the file "
        "defines on a row of its own, its reads and KV those of its bytes",
        own, model.spec.cache(own).bytes));
  }
  return table;
}

}  // namespace v41sim
