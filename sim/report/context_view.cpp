#include "sim/report/context_view.h"

#include <fmt/format.h>

#include "sim/costing/decode_rate.h"
#include "sim/graph/tensor_parallel.h"
#include "sim/report/error_band_view.h"
#include "sim/report/run_view.h"
#include "sim/report/svg_lines.h"

namespace v41sim {
namespace {

// The decode batch's limit besides KV memory: the one asked, or, lifted (0),
// the deployment's own said to be lifted, so the batch reads as what the GPU
// allows rather than what the deployment's engine is set to run.
std::string batch_limit_phrase(int64_t asked, int64_t deployments) {
  if (asked > 0) return fmt::format(" and a batch limit of {}", asked);
  if (deployments > 0) {
    return fmt::format(" alone (the deployment's batch limit of {} per GPU lifted: {})", deployments,
                       kAboveEngineBatchLimit);
  }
  return std::string();
}

std::string dollars(const ContextPoint& p, double usd) {
  return p.cost_known ? fmt::format("${:.2f}", usd) : "unknown";
}

std::string first_token(const ContextPoint& p) {
  if (!p.lone_not_served.empty()) return "not served: " + p.lone_not_served;
  return fmt::format("{:.2f} s{}", p.lone_ttft_ms / 1e3,
                     p.lone_context_parallel ? " (context-parallel)" : "");
}

// The sweep's deployment in a legend: its decode GPU, or both pools' GPUs.
std::string legend_name(const ContextSweep& s) {
  const DeploymentSpec& d = s.deployment;
  return d.prefill.gpu == d.decode.gpu ? d.decode.gpu : d.prefill.gpu + " + " + d.decode.gpu;
}

// One series per sweep of `value` over the points that have it (value > 0).
std::vector<LineSeries> series_of(const std::vector<ContextSweep>& sweeps, const std::string& what,
                                  bool dashed, double (*value)(const ContextPoint&)) {
  std::vector<LineSeries> out;
  for (std::size_t i = 0; i < sweeps.size(); ++i) {
    LineSeries line{legend_name(sweeps[i]) + ", " + what, {}, dashed, static_cast<int>(i)};
    for (const ContextPoint& p : sweeps[i].points) {
      if (value(p) > 0) line.points.emplace_back(static_cast<double>(p.context), value(p));
    }
    if (!line.points.empty()) out.push_back(std::move(line));
  }
  return out;
}

std::vector<LineSeries> joined(std::vector<LineSeries> a, const std::vector<LineSeries>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

std::string context_cost_svg(const std::string& model, const std::vector<ContextSweep>& sweeps) {
  const auto with_prompt = [](const ContextPoint& p) {
    return p.cost_known ? p.usd_per_million_output_with_prompt : 0.0;
  };
  const auto decode_only = [](const ContextPoint& p) {
    return p.cost_known ? p.usd_per_million_output_decode_only : 0.0;
  };
  return svg_lines({model + ": $ per 1M output tokens by session length", "tokens per session",
                    "$ per 1M output tokens", true},
                   joined(series_of(sweeps, "prompt prefilled", false, with_prompt),
                          series_of(sweeps, "prefix cached", true, decode_only)));
}

std::string context_capacity_svg(const std::string& model, const std::vector<ContextSweep>& sweeps) {
  const auto sessions = [](const ContextPoint& p) { return static_cast<double>(p.sessions_per_gpu); };
  const auto batch = [](const ContextPoint& p) { return static_cast<double>(p.batch_per_gpu); };
  return svg_lines({model + ": sessions per decode GPU and decode batch within TPOT", "tokens per session",
                    "sessions per GPU", true},
                   joined(series_of(sweeps, "sessions that fit", false, sessions),
                          series_of(sweeps, "decode batch", true, batch)));
}

// The share of sessions that must come back within the retention for the
// tier to pay for itself.
std::string return_share(const ContextPoint& p) {
  if (!p.cost_known || p.tier_pays_at_return_share <= 0) return "-";
  const std::string share = fmt::format("{:.2g}%", 100 * p.tier_pays_at_return_share);
  return p.tier_pays_at_return_share > 1 ? "never (" + share + ")" : share;
}

Table context_table(const std::string& model, const ContextSweep& s) {
  const DeploymentSpec& d = s.deployment;
  Table t(fmt::format("{} on {}: sessions from {} to {} tokens, {} output tokens each", model, d.name,
                      s.options.contexts.front(), s.options.contexts.back(), s.options.output_tokens),
          {"context", "KV per session", "sessions per decode GPU", "first token, one prompt alone",
           "decode batch per GPU (bound)", "TPOT (ms)", "output tokens/s per GPU", "decode band (90%)",
           "prefill per prompt (GPU-s)", "$ per 1M output, decode only", "$ per 1M output, prompt included",
           "of which the SSD tier", "keeping pays if this share returns"});
  for (const ContextPoint& p : s.points) {
    if (p.sessions_per_gpu < 1) {
      t.add_row({std::to_string(p.context), format_bytes(p.session_bytes), "0", first_token(p),
                 "none: one session does not fit", "-", "-", "-", "-", "-", "-", "-", "-"});
      continue;
    }
    t.add_row({std::to_string(p.context), format_bytes(p.session_bytes), std::to_string(p.sessions_per_gpu),
               first_token(p), fmt::format("{} ({})", p.batch_per_gpu, bound_name(p.bound)),
               fmt::format("{:.1f}", p.tpot_ms), fmt::format("{:.0f}", p.output_tokens_per_s_per_gpu),
               error_band_cell(p.decode_band), fmt::format("{:.2f}", p.prefill_gpu_s),
               dollars(p, p.usd_per_million_output_decode_only),
               dollars(p, p.usd_per_million_output_with_prompt),
               dollars(p, p.usd_per_million_output_ssd_tier), return_share(p)});
  }
  t.add_note(fmt::format(
      "context: a session's tokens at its end (prompt + {} output); the deployment {} ({}); KV per session: "
      "global KV at that context plus the window and compressor state (derived); sessions per decode GPU: "
      "what its HBM holds after the weights as the deployment places them (EP {}, {} redundant experts per "
      "group) and its reserve of {:g}",
      s.options.output_tokens, d.file, d.disaggregated ? "prefill and decode pools" : "one pool for both",
      d.decode.ep, d.decode.redundant_experts, d.reserve_fraction));
  if (d.decode.attention_tp > 1) t.add_note(kTensorParallelBatches);
  t.add_note(
      "first token: the serving simulation's TTFT for one session arriving at an idle deployment (its "
      "prefill "
      "steps and, where disaggregated, the KV transfer); under traffic it queues (run, plan)");
  t.add_note(fmt::format(
      "decode batch: the largest per GPU whose step, every session at this context, keeps TPOT <= {} ms, "
      "capped by KV memory{}; steady state: every decode rank at that batch, prefill interleaving not "
      "counted; speculative decoding verifies the draft length the engine would pick",
      s.options.tpot_ms, batch_limit_phrase(s.options.max_batch_per_gpu, d.decode.max_batch_per_gpu)));
  t.add_note(
      "prefill per prompt: GPU-seconds of the prompt's prefill with every rank busy with prompts of its own "
      "(short ones packed to the chunk budget, long ones chunked over their growing prefix); a "
      "context-parallel prompt: its prefill time alone times its instance's GPUs; no prefix-cache hit");
  t.add_note(
      "$ per 1M output: GPU price per second over the decode rate (decode only: as if every prompt's prefix "
      "were cached); prompt included adds the prompt's prefill GPU-seconds spread over its output; each pool "
      "taken as kept busy; prices: " +
      s.price_provenance);
  t.add_note(fmt::format(
      "of which the SSD tier: both $ figures include keeping the session's global KV at its end for {:g} h "
      "(the deployment's retention) at {}",
      d.kv.retention_s / 3600.0,
      d.kv.ssd_usd_per_tb_month.known()
          ? fmt::format("${:g} per TB-month ({})", d.kv.ssd_usd_per_tb_month.value(),
                        d.kv.ssd_usd_per_tb_month.provenance().kind_name())
          : "no price: " + d.kv.ssd_usd_per_tb_month.provenance().label() + ", left out"));
  t.add_note(
      "keeping pays if this share returns: the tier's $ for one session over its prompt's prefill $, which "
      "a session coming back within the retention finds cached instead of prefilling again (its SSD read "
      "and window replay not counted)");
  t.add_note(std::string("decode band: the step's; ") + kErrorBandMethod);
  std::vector<KernelModelUse> kernel_models;
  add_kernel_model_use(kernel_models, s.prefill_kernel_model, s.deployment.prefill.gpu);
  add_kernel_model_use(kernel_models, s.decode_kernel_model, s.deployment.decode.gpu);
  add_kernel_model_notes(t, kernel_models);
  return t;
}

nlohmann::json context_json(const std::string& model, const ContextSweep& s) {
  nlohmann::json points = nlohmann::json::array();
  for (const ContextPoint& p : s.points) {
    nlohmann::json j{{"context", p.context},
                     {"session_bytes", p.session_bytes},
                     {"sessions_per_decode_gpu", p.sessions_per_gpu}};
    if (p.lone_not_served.empty()) {
      j["lone_ttft_ms"] = p.lone_ttft_ms;
      j["lone_context_parallel"] = p.lone_context_parallel;
    } else {
      j["lone_not_served"] = p.lone_not_served;
    }
    if (p.sessions_per_gpu >= 1) {
      j["decode"] = {{"batch_per_gpu", p.batch_per_gpu},
                     {"bound", bound_name(p.bound)},
                     {"tpot_ms", p.tpot_ms},
                     {"drafts", p.drafts},
                     {"output_tokens_per_s_per_gpu", p.output_tokens_per_s_per_gpu},
                     {"error_band", error_band_json(p.decode_band)}};
      j["prefill"] = {{"gpu_s_per_prompt", p.prefill_gpu_s}, {"error_band", error_band_json(p.prefill_band)}};
      j["cost"] =
          p.cost_known
              ? nlohmann::json{{"known", true},
                               {"usd_per_million_output_decode_only", p.usd_per_million_output_decode_only},
                               {"usd_per_million_output_prompt_included",
                                p.usd_per_million_output_with_prompt},
                               {"usd_per_million_output_ssd_tier", p.usd_per_million_output_ssd_tier},
                               {"tier_pays_at_return_share", p.tier_pays_at_return_share}}
              : nlohmann::json{{"known", false}};
    }
    points.push_back(j);
  }
  const DeploymentSpec& d = s.deployment;
  return {{"model", model},
          {"deployment", d.name},
          {"deployment_file", d.file},
          {"prefill_gpu", d.prefill.gpu},
          {"decode_gpu", d.decode.gpu},
          {"output_tokens", s.options.output_tokens},
          {"tpot_limit_ms", s.options.tpot_ms},
          {"max_batch_per_gpu", s.options.max_batch_per_gpu},
          {"kernel_models", {{"prefill", s.prefill_kernel_model}, {"decode", s.decode_kernel_model}}},
          {"price_provenance", s.price_provenance},
          {"points", points}};
}

}  // namespace v41sim
