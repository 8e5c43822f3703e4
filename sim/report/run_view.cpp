#include "sim/report/run_view.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/graph/step_graph.h"
#include "sim/report/error_band_view.h"

namespace v41sim {
namespace {

nlohmann::json summary_json(const LatencySummary& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"p50", s.p50},
          {"p90", s.p90},     {"p99", s.p99},   {"max", s.max}};
}

std::vector<std::string> latency_row(const char* name, const LatencySummary& s) {
  return {name, format_fixed(s.mean, 1), format_fixed(s.p50, 1), format_fixed(s.p90, 1),
          format_fixed(s.p99, 1)};
}

}  // namespace

std::vector<Table> run_tables(const RunReport& r) {
  const ServingResult& x = r.result;
  Table head(fmt::format("{} on {} ({} GPUs), workload {}, {:.0f} s simulated, seed {}", r.model,
                         r.deployment.name, x.gpus, r.workload.name, x.duration_s, r.seed),
             {"quantity", "value"});
  head.add_row({"requests arrived / finished / in flight / rejected",
                fmt::format("{} / {} / {} / {}", x.arrived, x.finished, x.in_flight, x.rejected)});
  for (const auto& [reason, count] : x.rejected_by_reason)
    head.add_row({"  rejected: " + reason, std::to_string(count)});
  head.add_row({"throughput per GPU (input / output tokens/s)",
                fmt::format("{:.1f} / {:.1f}", x.input_tokens_per_s_per_gpu, x.output_tokens_per_s_per_gpu)});
  head.add_row({fmt::format("goodput (TTFT <= {} ms and TPOT <= {} ms)", r.deployment.sla.ttft_ms,
                            r.deployment.sla.tpot_ms),
                fmt::format("{:.3f} requests/s, {:.1f}% of finished", x.goodput_requests_per_s,
                            100 * x.goodput_fraction)});
  head.add_row(
      {"input tokens arrived / prefilled / served from cache",
       fmt::format("{} / {} / {}", x.input_tokens_arrived, x.input_tokens_prefilled, x.input_tokens_cached)});
  head.add_row({"window tokens replayed after SWA-state misses", std::to_string(x.input_tokens_replayed)});
  head.add_row({"global-KV hits / misses; SWA-state hits / misses / evictions",
                fmt::format("{} / {}; {} / {} / {}", x.kv_tiers.global_hits, x.kv_tiers.global_misses,
                            x.kv_tiers.swa_hits, x.kv_tiers.swa_misses, x.kv_tiers.swa_evictions)});
  head.add_row({"decode KV per GPU", format_bytes(x.decode_kv_bytes_per_gpu)});
  if (r.cost.known) {
    head.add_row({"cost per hour; per 1M input / output tokens (whole cost each)",
                  fmt::format("${:.2f}; ${:.3f} / ${:.3f}", r.cost.usd_per_hour, r.cost.usd_per_million_input,
                              r.cost.usd_per_million_output)});
  } else {
    head.add_row({"cost", r.cost.provenance});
  }
  head.add_row({"prefill / decode steps", fmt::format("{} / {}", x.prefill_steps, x.decode_steps)});
  head.add_row({"  of them run as two overlapped micro-batches",
                fmt::format("{} / {}", x.prefill_steps_split, x.decode_steps_split)});
  if (r.deployment.mixes_prompt_chunks()) {
    head.add_row({"  decode steps carrying prompt chunks", std::to_string(x.mixed_steps)});
  }
  if (r.deployment.prefill.context_parallel_min_tokens > 0) {
    head.add_row({fmt::format("  context-parallel prefill steps (prompts >= {} tokens)",
                              r.deployment.prefill.context_parallel_min_tokens),
                  std::to_string(x.context_parallel_steps)});
  }
  head.add_row({"kernel-model band of prefill / decode steps",
                x.prefill_band.describe() + " / " + x.decode_band.describe()});
  head.add_row({"events; step shapes costed", fmt::format("{}; {}", x.events, x.step_shapes_costed)});
  head.add_note("step times from the kernel model, " + r.kernel_model);
  head.add_note(
      "step bands: time-weighted over the steps simulated; TTFT and TPOT inherit them for their compute "
      "share (queueing is the simulator's own)");
  head.add_note("output lengths " + r.workload.effort_output_multiplier.provenance().label());
  if (r.cost.known) head.add_note("GPU price " + r.cost.provenance);
  if (r.deployment.mixes_prompt_chunks()) head.add_note(kMixedStepAssumption);

  Table latency("Latency of finished requests (ms)", {"metric", "mean", "p50", "p90", "p99"});
  latency.add_row(latency_row("TTFT", x.ttft_ms));
  latency.add_row(latency_row("TPOT (inter-token)", x.tpot_ms));
  latency.add_row(latency_row("end to end", x.e2e_ms));
  latency.add_row(latency_row("prefill queue wait", x.prefill_wait_ms));
  latency.add_row(latency_row("decode admission wait", x.decode_wait_ms));

  Table breakdown("Where a finished request's time went (mean ms)", {"stage", "ms"});
  breakdown.add_row({"SSD read of cached global KV", format_fixed(x.mean_ssd_read_ms, 2)});
  breakdown.add_row({"prefill queue", format_fixed(x.prefill_wait_ms.mean, 2)});
  breakdown.add_row({"prefill compute (incl. EP communication)", format_fixed(x.mean_prefill_ms, 2)});
  breakdown.add_row({"KV transfer to decode", format_fixed(x.mean_transfer_ms, 2)});
  breakdown.add_row({"decode admission queue", format_fixed(x.decode_wait_ms.mean, 2)});
  breakdown.add_row({"decode", format_fixed(x.mean_decode_ms, 2)});
  breakdown.add_row({"  of prefill + decode: EP communication not hidden by compute",
                     format_fixed(x.mean_communication_ms, 2)});

  Table occupancy(
      "Occupancy over time (10 samples of 200)",
      {"time (s)", "decode KV used", "prefill queue", "decode queue", "decoding", "SWA states in host pool"});
  for (std::size_t i = 0; i < x.occupancy.size(); i += std::max<std::size_t>(1, x.occupancy.size() / 10)) {
    const OccupancySample& o = x.occupancy[i];
    occupancy.add_row({format_fixed(o.time_s, 0), fmt::format("{:.1f}%", 100 * o.decode_kv_used_fraction),
                       std::to_string(o.prefill_queue), std::to_string(o.decode_queue),
                       std::to_string(o.decoding), std::to_string(o.host_pool_sessions)});
  }
  return {head, latency, breakdown, occupancy};
}

nlohmann::json run_json(const RunReport& r) {
  const ServingResult& x = r.result;
  nlohmann::json occupancy = nlohmann::json::array();
  for (const OccupancySample& o : x.occupancy) {
    occupancy.push_back({{"time_s", o.time_s},
                         {"decode_kv_used_fraction", o.decode_kv_used_fraction},
                         {"prefill_queue", o.prefill_queue},
                         {"decode_queue", o.decode_queue},
                         {"decoding", o.decoding},
                         {"host_pool_sessions", o.host_pool_sessions}});
  }
  return {{"model", r.model},
          {"deployment", r.deployment.name},
          {"workload", r.workload.name},
          {"seed", r.seed},
          {"duration_s", x.duration_s},
          {"gpus", x.gpus},
          {"requests",
           {{"arrived", x.arrived},
            {"finished", x.finished},
            {"in_flight", x.in_flight},
            {"rejected", x.rejected},
            {"rejected_by_reason", x.rejected_by_reason}}},
          {"tokens",
           {{"input_arrived", x.input_tokens_arrived},
            {"input_prefilled", x.input_tokens_prefilled},
            {"input_cached", x.input_tokens_cached},
            {"input_replayed", x.input_tokens_replayed},
            {"output_generated", x.output_tokens_generated}}},
          {"ttft_ms", summary_json(x.ttft_ms)},
          {"tpot_ms", summary_json(x.tpot_ms)},
          {"e2e_ms", summary_json(x.e2e_ms)},
          {"prefill_wait_ms", summary_json(x.prefill_wait_ms)},
          {"decode_wait_ms", summary_json(x.decode_wait_ms)},
          {"breakdown_ms",
           {{"ssd_read", x.mean_ssd_read_ms},
            {"prefill_queue", x.prefill_wait_ms.mean},
            {"prefill", x.mean_prefill_ms},
            {"transfer", x.mean_transfer_ms},
            {"decode_queue", x.decode_wait_ms.mean},
            {"decode", x.mean_decode_ms},
            {"communication", x.mean_communication_ms}}},
          {"throughput_tokens_per_s_per_gpu",
           {{"input", x.input_tokens_per_s_per_gpu}, {"output", x.output_tokens_per_s_per_gpu}}},
          {"goodput",
           {{"requests_per_s", x.goodput_requests_per_s},
            {"fraction", x.goodput_fraction},
            {"ttft_ms", r.deployment.sla.ttft_ms},
            {"tpot_ms", r.deployment.sla.tpot_ms}}},
          {"littles_law",
           {{"mean_in_system", x.mean_in_system},
            {"arrival_rate_per_s", x.arrival_rate_per_s},
            {"mean_sojourn_s", x.mean_sojourn_s}}},
          {"kv_tiers", kv_tiers_json(x.kv_tiers)},
          {"decode_kv_bytes_per_gpu", x.decode_kv_bytes_per_gpu},
          {"cost", cost_json(r.cost)},
          {"steps",
           {{"prefill", x.prefill_steps},
            {"context_parallel_prefill", x.context_parallel_steps},
            {"decode", x.decode_steps},
            {"decode_with_prompt_chunks", x.mixed_steps},
            {"prefill_two_micro_batches", x.prefill_steps_split},
            {"decode_two_micro_batches", x.decode_steps_split}}},
          {"error_band",
           {{"prefill", error_band_json(x.prefill_band)},
            {"decode", error_band_json(x.decode_band)},
            {"method", kErrorBandMethod}}},
          {"events", x.events},
          {"occupancy", occupancy},
          {"provenance",
           {{"step_times", r.kernel_model},
            {"output_lengths", r.workload.effort_output_multiplier.provenance().label()}}}};
}

std::string output_token_price(const ServingCost& cost) {
  return cost.known ? fmt::format("${:.2f}", cost.usd_per_million_output) : "unknown";
}

void collect_kernel_models(const ServedRun& run, std::vector<std::string>& labels) {
  for (const std::string& label : {run.prefill_kernel_model, run.decode_kernel_model}) {
    if (std::find(labels.begin(), labels.end(), label) == labels.end()) labels.push_back(label);
  }
}

void add_served_run_notes(Table& table, const std::vector<std::string>& kernel_models) {
  for (const std::string& label : kernel_models) table.add_note("step times from the kernel model, " + label);
  table.add_note(
      "$ per 1M output tokens charges the whole deployment's cost over the arrival window to output tokens; "
      "GPU prices from each profile (unknown where no public price exists)");
}

nlohmann::json kv_tiers_json(const KvTierCounters& c) {
  return {{"global_hits", c.global_hits},
          {"global_misses", c.global_misses},
          {"swa_hits", c.swa_hits},
          {"swa_misses", c.swa_misses},
          {"swa_evictions", c.swa_evictions}};
}

}  // namespace v41sim
