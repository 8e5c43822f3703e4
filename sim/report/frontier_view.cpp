#include "sim/report/frontier_view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "sim/cost/error_band.h"
#include "sim/graph/tensor_parallel.h"
#include "sim/report/error_band_view.h"
#include "sim/report/svg_lines.h"

namespace v41sim {
namespace {

// The sweep runs to KV-full whatever batch the deployment's engine is set to:
// said where it passes that limit, so those points do not read as what it runs.
std::string above_batch_limit(const std::vector<DecodeFrontier>& frontiers) {
  std::vector<int64_t> limits;
  for (const DecodeFrontier& f : frontiers) {
    const int64_t limit = f.deployment.decode.max_batch_per_gpu;
    const bool passed = std::any_of(f.points.begin(), f.points.end(),
                                    [limit](const FrontierPoint& p) { return p.rate.batch_per_gpu > limit; });
    if (limit > 0 && passed && std::find(limits.begin(), limits.end(), limit) == limits.end())
      limits.push_back(limit);
  }
  if (limits.empty()) return "";
  return fmt::format("batches above the deployment's own limit ({} per GPU, its max_batch_per_gpu) are {}",
                     fmt::join(limits, ", "), kAboveEngineBatchLimit);
}

// A user's speed in whole tokens/s, with two significant digits below 10
// (a 1M-token context's largest batches stream under one token a second).
std::string user_speed_cell(double tokens_per_s) {
  return tokens_per_s >= 10 ? fmt::format("{:.0f}", tokens_per_s) : fmt::format("{:.2g}", tokens_per_s);
}

}  // namespace

Table frontier_table(const std::string& model, const std::vector<DecodeFrontier>& frontiers) {
  const int64_t context = frontiers.empty() ? 0 : frontiers.front().context;
  Table t(fmt::format("{} decode at {} tokens of context: tokens/s per user against tokens/s per GPU", model,
                      context),
          {"deployment", "batch per GPU", "TPOT (ms)", "tokens/s per user", "tokens/s per GPU",
           "drafts verified", "step band (90%)", "$ per 1M output tokens", "Pareto"});
  for (const DecodeFrontier& f : frontiers) {
    for (const FrontierPoint& p : f.points) {
      const DecodeRate& r = p.rate;
      t.add_row({f.deployment.name, std::to_string(r.batch_per_gpu), fmt::format("{:.1f}", r.tpot_ms),
                 user_speed_cell(r.tokens_per_s_per_user), fmt::format("{:.0f}", r.tokens_per_s_per_gpu),
                 std::to_string(r.drafts), error_band_cell(r.band),
                 p.cost_known ? fmt::format("${:.3f}", p.usd_per_million_output) : std::string("unknown"),
                 p.pareto ? "yes" : ""});
    }
  }
  t.add_note(
      "every decode rank at that batch (1, 2, 4, ... and the most one decode GPU's KV memory holds), every "
      "session at this context; steady state of the serving simulation's decode steps: no prefill "
      "interleaving, no queueing; speculative decoding verifies the draft length the engine would pick");
  if (const std::string above = above_batch_limit(frontiers); !above.empty()) t.add_note(above);
  if (std::any_of(frontiers.begin(), frontiers.end(),
                  [](const DecodeFrontier& f) { return f.deployment.decode.attention_tp > 1; }))
    t.add_note(kTensorParallelBatches);
  t.add_note(
      "Pareto: no point of any deployment here gives users as many tokens per second or more for no more $ "
      "per 1M output tokens, one of the two strictly (a point without a price: against its own GPU's points, "
      "by tokens/s per GPU)");
  t.add_note(
      "$ per 1M output tokens: the decode GPU's price per second over its output rate (prompts and the SSD "
      "tier not counted: `context` adds both)");
  t.add_note(std::string("step band: the decode step's; ") + kErrorBandMethod);
  std::vector<std::string> labels;
  for (const DecodeFrontier& f : frontiers) {
    const std::string note = "kernel model on " + f.deployment.decode.gpu + ": " + f.kernel_model +
                             "; price: " + f.price_provenance;
    if (std::find(labels.begin(), labels.end(), note) == labels.end()) labels.push_back(note);
  }
  for (const std::string& note : labels) t.add_note(note);
  return t;
}

nlohmann::json frontier_json(const std::string& model, const std::vector<DecodeFrontier>& frontiers) {
  nlohmann::json out = nlohmann::json::array();
  for (const DecodeFrontier& f : frontiers) {
    nlohmann::json points = nlohmann::json::array();
    for (const FrontierPoint& p : f.points) {
      const DecodeRate& r = p.rate;
      nlohmann::json j{{"batch_per_gpu", r.batch_per_gpu},
                       {"tpot_ms", r.tpot_ms},
                       {"tokens_per_s_per_user", r.tokens_per_s_per_user},
                       {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
                       {"drafts", r.drafts},
                       {"error_band", error_band_json(r.band)},
                       {"pareto", p.pareto}};
      j["usd_per_million_output_tokens"] = p.cost_known ? nlohmann::json(p.usd_per_million_output) : nullptr;
      points.push_back(j);
    }
    out.push_back({{"deployment", f.deployment.name},
                   {"decode_gpu", f.deployment.decode.gpu},
                   {"ep", f.deployment.decode.ep},
                   {"redundant_experts", f.deployment.decode.redundant_experts},
                   {"context", f.context},
                   {"sessions_per_decode_gpu", f.sessions_per_gpu},
                   {"max_batch_per_gpu", f.deployment.decode.max_batch_per_gpu},
                   {"kernel_model", f.kernel_model},
                   {"price_provenance", f.price_provenance},
                   {"points", points}});
  }
  return {{"model", model}, {"frontiers", out}};
}

std::string frontier_svg(const std::string& model, const std::vector<DecodeFrontier>& frontiers) {
  std::vector<LineSeries> series;
  for (std::size_t i = 0; i < frontiers.size(); ++i) {
    LineSeries line{frontiers[i].deployment.name, {}, false, static_cast<int>(i)};
    for (const FrontierPoint& p : frontiers[i].points)
      line.points.emplace_back(p.rate.tokens_per_s_per_user, p.rate.tokens_per_s_per_gpu);
    series.push_back(std::move(line));
  }
  const int64_t context = frontiers.empty() ? 0 : frontiers.front().context;
  return svg_lines({fmt::format("{}: decode at {} tokens, batch 1 (right) to KV-full (left)", model, context),
                    "output tokens/s per user", "output tokens/s per GPU", false},
                   series);
}

}  // namespace v41sim
