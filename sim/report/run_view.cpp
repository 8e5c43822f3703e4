#include "sim/report/run_view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "sim/graph/expert_load.h"
#include "sim/graph/step_graph.h"
#include "sim/metrics/gap_histogram.h"
#include "sim/report/error_band_view.h"
#include "sim/serving/step_time_cache.h"

namespace v41sim {
namespace {

constexpr const char* kItlMeaning =
    "ITL: the gap between a request's streamed chunks, the first token's to the first step's included: a "
    "decode step's token and the drafts it accepted reach the client together (as vLLM's benchmark times "
    "them), and in an aggregated deployment a prompt's step between two decode steps is one gap";

// A summary of no samples has no figures: null, not zeros a reader would take for latencies.
nlohmann::json summary_json(const LatencySummary& s) {
  if (s.count == 0)
    return {{"count", 0},     {"mean", nullptr}, {"p50", nullptr},
            {"p90", nullptr}, {"p99", nullptr},  {"max", nullptr}};
  return {{"count", s.count}, {"mean", s.mean}, {"p50", s.p50},
          {"p90", s.p90},     {"p99", s.p99},   {"max", s.max}};
}

std::vector<std::string> latency_row(const char* name, const LatencySummary& s) {
  if (s.count == 0) return {name, "-", "-", "-", "-"};
  return {name, format_fixed(s.mean, 1), format_fixed(s.p50, 1), format_fixed(s.p90, 1),
          format_fixed(s.p99, 1)};
}

// A mean over finished requests, "-" where none finished.
std::string finished_mean(const ServingResult& x, double mean_ms) {
  return x.finished > 0 ? format_fixed(mean_ms, 2) : std::string("-");
}

// Each seed's headline figures (price null where the GPU has none).
nlohmann::json seeds_json(const ServedRun& run) {
  nlohmann::json seeds = nlohmann::json::array();
  for (const SeedOutcome& s : run.seeds) {
    seeds.push_back({{"seed", s.seed},
                     {"arrived", s.arrived},
                     {"within_sla", s.within_sla},
                     {"ttft_p99_ms", s.ttft_p99_ms},
                     {"tpot_p99_ms", s.tpot_p99_ms},
                     {"itl_p99_ms", s.itl_p99_ms},
                     {"longest_itl_p99_ms", s.longest_itl_p99_ms},
                     {"output_tokens_per_s_per_gpu", s.output_tokens_per_s_per_gpu},
                     {"steady", s.steady},
                     {"usd_per_million_output",
                      run.cost.known ? nlohmann::json(s.usd_per_million_output) : nlohmann::json(nullptr)}});
  }
  return seeds;
}

// The headline figures as mean, least and most over the seeds.
nlohmann::json over_seeds_json(const ServedRun& run) {
  const auto spread = [&run](double SeedOutcome::*figure) {
    const SeedSpread s = run.spread(figure);
    return nlohmann::json{{"mean", s.mean}, {"min", s.min}, {"max", s.max}};
  };
  return {{"count", run.seeds.size()},
          {"ttft_p99_ms", spread(&SeedOutcome::ttft_p99_ms)},
          {"tpot_p99_ms", spread(&SeedOutcome::tpot_p99_ms)},
          {"itl_p99_ms", spread(&SeedOutcome::itl_p99_ms)},
          {"longest_itl_p99_ms", spread(&SeedOutcome::longest_itl_p99_ms)},
          {"output_tokens_per_s_per_gpu", spread(&SeedOutcome::output_tokens_per_s_per_gpu)},
          {"usd_per_million_output",
           run.cost.known ? spread(&SeedOutcome::usd_per_million_output) : nlohmann::json(nullptr)}};
}

// A share within the SLA as a percentage, with one decimal unless that would
// print the threshold itself for a share on the other side of it (98.96% is
// not "99.0%" beside "no"): then as many more decimals as tell them apart.
std::string share_beside_threshold(double share, double threshold) {
  int decimals = 1;
  const auto at = [](double x, int d) { return fmt::format("{:.{}f}", 100 * x, d); };
  while (decimals < 4 && share != threshold && at(share, decimals) == at(threshold, decimals)) ++decimals;
  return at(share, decimals);
}

// "yes" or "no"; with several seeds also how many meet it alone: "yes (2 of 3 seeds alone)"; a mix
// that misses on its classes, not pooled, names them: "no: agent coding 97.1%"; else a miss says what
// its requests missed: "no: 21.4% over TTFT".
std::string meets_cell(const ServedRun& run, double min_within_sla) {
  const bool meets = run.meets_sla(min_within_sla);
  std::string verdict = meets ? "yes" : "no";
  if (!meets && run.within_sla() < min_within_sla) {
    if (const std::string missed = misses_phrase(run); !missed.empty()) verdict += ": " + missed;
  } else if (!meets) {
    const std::vector<double> shares = run.class_within_sla();
    std::vector<std::string> short_of;
    for (std::size_t i = 0; i < shares.size() && i < run.result.by_class.size(); ++i) {
      if (shares[i] < min_within_sla)
        short_of.push_back(run.result.by_class[i].name + " " +
                           share_beside_threshold(shares[i], min_within_sla) + "%");
    }
    verdict += ": " + fmt::format("{}", fmt::join(short_of, ", "));
  }
  // Met over a window whose queue was still moving: for that window, not for hours.
  const int64_t unsettled = meets ? run.seeds_unsettled() : 0;
  if (run.seeds.size() < 2) return unsettled > 0 ? verdict + ", not settled" : verdict;
  return fmt::format("{} ({} of {} seeds alone{})", verdict, run.seeds_meeting_sla(min_within_sla),
                     run.seeds.size(), unsettled > 0 ? fmt::format("; {} not settled", unsettled) : "");
}

// A run that met the SLA, served again over a longer window: whether it held
// there, after what the run's own cell says (with several seeds, how many met it alone).
std::string confirmed_cell(const ServedRun& run, double min_within_sla, const ServedRun& confirmation,
                           bool holds) {
  const std::string met = meets_cell(run, min_within_sla);
  return holds ? fmt::format("{}, and over {}", met, longer_window(confirmation))
               : met + ", not over a longer run";
}

// The run repeated with the next seeds: how far its headline figures move.
// What a GPU's rated power leaves out, wherever an energy figure is printed.
constexpr const char* kRatedPowerCaveat =
    "an upper bound on the GPUs' own draw (decode, bound by memory, draws less); hosts, network, storage and "
    "cooling not counted";

std::string limits_phrase(const SlaSpec& sla) {
  if (!sla.limits_itl()) return fmt::format("TTFT <= {} ms and TPOT <= {} ms", sla.ttft_ms, sla.tpot_ms);
  return fmt::format("TTFT <= {} ms, TPOT <= {} ms and no gap between streamed chunks over {} ms",
                     sla.ttft_ms, sla.tpot_ms, sla.itl_ms);
}

namespace {

// A request's longest gap may be at most this; null: no limit.
nlohmann::json itl_limit_json(const SlaSpec& sla) {
  return sla.limits_itl() ? nlohmann::json(sla.itl_ms) : nlohmann::json(nullptr);
}

// Requests that missed the SLA, by what they missed (a request may miss several).
nlohmann::json sla_misses_json(const SlaMisses& m) {
  return {{"unfinished", m.unfinished},
          {"over_ttft", m.ttft},
          {"over_tpot", m.tpot},
          {"over_longest_itl", m.itl}};
}

}  // namespace

// A class's requests within the SLA, of those that arrived ("-" where none arrived).
std::string class_within_sla(const ClassOutcome& c) {
  if (c.arrived == 0) return "-";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(c.within_sla) / static_cast<double>(c.arrived));
}

// Where the output lengths come from: the workload's effort, or each class's in a mix.
std::string output_lengths_source(const WorkloadSpec& w) {
  if (w.mix.empty()) return w.effort_output_multiplier.provenance().label();
  std::string out;
  for (const WorkloadMixClass& c : w.mix)
    out +=
        (out.empty() ? "" : "; ") + c.name + ": " + c.sessions.effort_output_multiplier.provenance().label();
  return out;
}

// A mix of traffic's classes side by side (the first seed's run).
Table classes_table(const RunReport& r) {
  const ServingResult& x = r.run.result;
  const bool itl_limits = sla_limits_itl(r.deployment.sla, r.workload);
  std::vector<std::string> columns{
      "class",
      "share of sessions",
      itl_limits ? "SLA: TTFT / TPOT / longest ITL (ms)" : "SLA: TTFT / TPOT (ms)",
      "priority",
      "sessions",
      "requests",
      "finished",
      "within SLA",
      "TTFT p50 / p99 (ms)",
      "TPOT p50 / p99 (ms)",
      "ITL p50 / p99 (ms)"};
  if (itl_limits) columns.emplace_back("longest ITL p50 / p99 (ms)");
  Table t("By class of traffic", columns);
  for (std::size_t i = 0; i < x.by_class.size(); ++i) {
    const ClassOutcome& c = x.by_class[i];
    std::string limits = fmt::format("{} / {}", c.sla.ttft_ms, c.sla.tpot_ms);
    if (itl_limits) limits += c.sla.limits_itl() ? fmt::format(" / {}", c.sla.itl_ms) : " / -";
    std::vector<std::string> cells{c.name,
                                   fmt::format("{:.1f}%", 100 * r.workload.mix[i].share),
                                   limits,
                                   std::to_string(r.workload.mix[i].priority),
                                   std::to_string(c.sessions),
                                   std::to_string(c.arrived),
                                   std::to_string(c.finished),
                                   class_within_sla(c),
                                   p50_p99(c.ttft_ms, 1),
                                   p50_p99(c.tpot_ms, 1),
                                   p50_p99(c.itl_ms, 1)};
    if (itl_limits) cells.push_back(p50_p99(c.longest_itl_ms, 1));
    t.add_row(cells);
  }
  t.add_note(fmt::format(
      "each session is of one class, drawn with the shares; within SLA: requests that finished within their "
      "class's limits, of those of the class that arrived; SLA: {}",
      sla_phrase(r.deployment.sla, r.workload)));
  t.add_note(
      has_class_priorities(r.workload)
          ? "priority: a class's waiting prompts, and its KV waiting for a decode rank's room, go ahead of "
            "those of a higher number (as vLLM orders its waiting queue); a prompt with chunks prefilled "
            "is not passed, nothing running is preempted"
          : "priority: one for every class, so first come, first served");
  return t;
}

Table seeds_table(const RunReport& r) {
  // Where an ITL limit judges, the p99 of each request's longest gap too.
  const bool longest_itl = sla_limits_itl(r.deployment.sla, r.workload);
  std::vector<std::string> columns{"seed",          "requests arrived", "within SLA",
                                   "TTFT p99 (ms)", "TPOT p99 (ms)",    "ITL p99 (ms)"};
  if (longest_itl) columns.emplace_back("longest ITL p99 (ms)");
  columns.insert(columns.end(), {"tokens/s/GPU out", "$ per 1M output tokens"});
  Table t(fmt::format("The same run with {} seeds", r.run.seeds.size()), columns);
  const auto price = [&r](double usd) { return r.run.cost.known ? fmt::format("${:.3f}", usd) : "unknown"; };
  // One row: the label and count, then each figure as `at` reads it.
  const auto row = [&](std::string label, double arrived, const auto& at) {
    std::vector<std::string> cells{std::move(label),
                                   format_fixed(arrived, 0),
                                   fmt::format("{:.1f}%", 100 * at(&SeedOutcome::within_sla)),
                                   format_fixed(at(&SeedOutcome::ttft_p99_ms), 0),
                                   format_fixed(at(&SeedOutcome::tpot_p99_ms), 1),
                                   format_fixed(at(&SeedOutcome::itl_p99_ms), 1)};
    if (longest_itl) cells.push_back(format_fixed(at(&SeedOutcome::longest_itl_p99_ms), 1));
    cells.push_back(format_fixed(at(&SeedOutcome::output_tokens_per_s_per_gpu), 0));
    cells.push_back(price(at(&SeedOutcome::usd_per_million_output)));
    t.add_row(std::move(cells));
  };
  for (const SeedOutcome& s : r.run.seeds) {
    row(std::to_string(s.seed), static_cast<double>(s.arrived),
        [&s](double SeedOutcome::*figure) { return s.*figure; });
  }
  const ServedRun& all = r.run;
  std::vector<double> arrived;
  for (const SeedOutcome& s : r.run.seeds) arrived.push_back(static_cast<double>(s.arrived));
  for (const auto& [name, pick] : {std::pair{"mean", &SeedSpread::mean}, std::pair{"least", &SeedSpread::min},
                                   std::pair{"most", &SeedSpread::max}}) {
    row(name, spread_of(arrived).*pick,
        [&all, pick](double SeedOutcome::*figure) { return all.spread(figure).*pick; });
  }
  const bool trace = r.workload.arrival == WorkloadSpec::Arrival::kTrace;
  t.add_note(fmt::format(
      "the tables above are seed {}'s run; {}; requests within the SLA pooled over every seed: {:.2f}%",
      r.seed,
      trace ? "a trace gives every arrival and length, so its seeds run the same requests (with speculative "
              "decoding, each seed draws other draft acceptances)"
            : "each seed draws other arrivals, prompt and output lengths, think times and draft acceptances",
      100 * all.within_sla()));
  return t;
}

// Each pool's expert placement, under the busiest rank every MoE layer waits for.
std::string expert_load_note(const DeploymentSpec& d) {
  const auto pool = [](const PoolSpec& p) {
    return fmt::format("EP {}, {} redundant experts, Zipf skew {:g}", p.ep, p.redundant_experts,
                       p.routing_skew);
  };
  return fmt::format("{} (prefill: {}; decode: {}; as the deployment says); {}", kChanceRoutingAssumption,
                     pool(d.prefill), pool(d.decode), kGroupTokensAssumption);
}

}  // namespace

std::string traffic_note(const WorkloadSpec& workload) {
  const std::string note = "traffic '" + workload.name + "' (" + workload.source + ")";
  if (workload.arrival != WorkloadSpec::Arrival::kClosedLoop) return note;
  const std::string loop =
      note + ": " + load_phrase(workload) + ", each session that ends followed at once by a new one";
  if (workload.prompts <= 0) return loop;
  return loop + fmt::format(" until {} have started (the benchmark's prompts), none after", workload.prompts);
}

std::string time_held(const SsdTierCost& tier) {
  const double retention_h = tier.retention_s / 3600.0;
  if (tier.hold_s >= tier.retention_s) return fmt::format("{:g} h", retention_h);
  // Less: resumed sessions replaced theirs sooner, or a full tier evicted them.
  const std::string held = fmt::format("{:.1f} h", tier.hold_s / 3600.0);
  if (tier.keeps_s >= tier.retention_s) return fmt::format("{} of a {:g} h retention", held, retention_h);
  return fmt::format("{}; a full tier keeps a context {:.1f} h of a {:g} h retention", held,
                     tier.keeps_s / 3600.0, retention_h);
}

std::string steady_state_phrase(const ServingResult& x) {
  const SteadyState& s = x.steady_state;
  if (x.window_ends_with_prompts)
    return "not asked: a benchmark's prompts served to the last, its load falling to none by design";
  if (!s.judged) return fmt::format("not judged: {} batches over the window, too few", s.batches);
  const std::string ends = fmt::format(
      "{:.1f} at the window's start, {:.1f} at its end; a line through it moves {:+.0f}% over "
      "the window, t = {:.1f}",
      s.first_batch, s.last_batch, 100 * s.trend, s.trend_t);
  const double dropped_s = s.truncated_share() * x.duration_s;
  const std::string mser =
      fmt::format("MSER-5 truncates {} of {} batches ({:.0f} s), which moves the mean {:+.1f}%", s.truncated,
                  s.batches, dropped_s, 100 * s.mean_shift);
  if (s.steady()) return fmt::format("steady ({}): {}", ends, mser);
  if (x.replays_trace) {
    return fmt::format(
        "not settled ({}): {}; a trace's load rises and falls as its sessions start and end, and where the "
        "queue grows the deployment is overloaded: its rates and $ are this trace's, no steady state's",
        ends, mser);
  }
  return fmt::format(
      "not settled ({}): {}; the deployment was still filling up (a longer --warm-up) or, where the queue "
      "grows, overloaded, and its rates and $ are no steady state's",
      ends, mser);
}

nlohmann::json steady_state_json(const ServingResult& x) {
  const SteadyState& s = x.steady_state;
  return {{"method",
           fmt::format("MSER-5 on the mean requests in the system over each of {} slices of the measured "
                       "window",
                       s.batches * SteadyState::kBatch)},
          {"judged", s.judged},
          {"batches", s.batches},
          {"truncated_batches", s.truncated},
          {"truncated_s", s.truncated_share() * x.duration_s},
          {"mean_shift", s.mean_shift},
          {"trend", s.trend},
          {"trend_t", s.trend_t},
          {"in_system_at_start", s.first_batch},
          {"in_system_at_end", s.last_batch},
          {"steady", s.steady()}};
}

namespace {

// What the run served: requests, tokens and the KV tiers' lookups.
void add_traffic_rows(Table& head, const RunReport& r) {
  const ServingResult& x = r.run.result;
  head.add_row({"requests arrived / finished / in flight / rejected",
                fmt::format("{} / {} / {} / {}", x.arrived, x.finished, x.in_flight, x.rejected)});
  for (const auto& [reason, count] : x.rejected_by_reason)
    head.add_row({"  rejected: " + reason, std::to_string(count)});
  if (r.workload.arrival == WorkloadSpec::Arrival::kTrace && r.workload.trace_block_tokens == 0) {
    head.add_row({"  of them held for their session's previous answer (mean wait); still held at the end",
                  fmt::format("{} ({:.1f} s); {}", x.trace_turns_held, x.mean_trace_turn_held_s(),
                              x.trace_turns_still_held)});
  }
  head.add_row({"requests in the system over the measured window", steady_state_phrase(x)});
  head.add_row({"throughput per GPU (input / output tokens/s)",
                fmt::format("{:.1f} / {:.1f}", x.input_tokens_per_s_per_gpu, x.output_tokens_per_s_per_gpu)});
  head.add_row({fmt::format("goodput ({})", sla_phrase(r.deployment.sla, r.workload)),
                x.finished > 0 ? fmt::format("{:.3f} requests/s, {:.1f}% of finished",
                                             x.goodput_requests_per_s, 100 * x.goodput_fraction)
                               : std::string("0 requests/s (none finished)")});
  const SlaMisses& m = x.sla_misses;
  head.add_row({"  missed it: over TTFT / TPOT / longest ITL; unfinished",
                fmt::format("{} / {} / {}; {} (requests; one may pass over several limits)", m.ttft, m.tpot,
                            sla_limits_itl(r.deployment.sla, r.workload) ? std::to_string(m.itl) : "no limit",
                            m.unfinished)});
  head.add_row(
      {"input tokens arrived / prefilled / served from cache",
       fmt::format("{} / {} / {}", x.input_tokens_arrived, x.input_tokens_prefilled, x.input_tokens_cached)});
  if (r.workload.trace_block_tokens > 0) {
    head.add_row({"  of them in leading blocks an earlier row names (what a tier keeping all at once serves)",
                  std::to_string(x.input_tokens_shareable)});
  }
  head.add_row({"window tokens replayed after SWA-state misses", std::to_string(x.input_tokens_replayed)});
  head.add_row({"global-KV hits / misses; SWA-state hits / misses / evictions",
                fmt::format("{} / {}; {} / {} / {}", x.kv_tiers.global_hits, x.kv_tiers.global_misses,
                            x.kv_tiers.swa_hits, x.kv_tiers.swa_misses, x.kv_tiers.swa_evictions)});
  head.add_row({"decode KV per GPU", format_bytes(x.decode_kv_bytes_per_gpu)});
}

// What it cost: the SSD tier, the whole deployment per hour and its power.
void add_cost_rows(Table& head, const RunReport& r) {
  const ServingResult& x = r.run.result;
  const SsdTierCost& tier = r.run.cost.ssd_tier;
  if (x.sessions_resumed > 0) {
    head.add_row({"sessions resumed after a gap / their earlier context found in the SSD tier",
                  fmt::format("{} of {} / {}", x.sessions_resumed, x.sessions_arrived, x.resumed_found)});
  }
  // A block-hashed trace's sessions are its requests, each leaving the blocks no earlier one named.
  const bool blocks = r.workload.trace_block_tokens > 0;
  head.add_row(
      {blocks ? "SSD tier at steady state (requests/s x global KV of the blocks each adds x time held)"
              : "SSD tier at steady state (sessions/s x global KV after a session's last turn x time held)",
       fmt::format("{:.2f} TB ({:.3f} {}/s x {} ({:.0f} tokens) x {}){}; {}", tier.bytes / 1e12,
                   tier.sessions_per_s, blocks ? "requests" : "sessions",
                   format_bytes(tier.bytes_per_session), tier.last_context_tokens, time_held(tier),
                   tier.capacity_bytes > 0
                       ? fmt::format(" of {:.2f} TB provisioned", tier.capacity_bytes / 1e12)
                       : std::string(),
                   tier.priced ? fmt::format("${:.2f} per hour", tier.usd_per_hour) : "no price")});
  head.add_row({"SSD tier's clients (one on each prefill node) busy with reads",
                fmt::format("{:.1f}% of the run", 100 * x.ssd_clients_busy_fraction)});
  if (r.run.cost.known) {
    head.add_row({"cost per hour; per 1M input / output tokens (whole cost each)",
                  fmt::format("${:.2f}; ${:.3f} / ${:.3f}", r.run.cost.usd_per_hour,
                              r.run.cost.usd_per_million_input, r.run.cost.usd_per_million_output)});
  } else {
    head.add_row({"cost", r.run.cost.provenance});
  }
  const GpuPower& power = r.run.cost.power;
  head.add_row({"GPUs at rated power; energy per 1M output tokens at it",
                power.known
                    ? fmt::format("{:.1f} kW; {:.3f} kWh", power.rated_kw, power.kwh_per_million_output)
                    : power.provenance});
}

// How the engines stepped: the steps of each kind the deployment runs.
void add_step_rows(Table& head, const RunReport& r) {
  const ServingResult& x = r.run.result;
  head.add_row({"prefill / decode steps", fmt::format("{} / {}", x.prefill_steps, x.decode_steps)});
  head.add_row({"  of them run as two overlapped micro-batches",
                fmt::format("{} / {}", x.prefill_steps_split, x.decode_steps_split)});
  head.add_row({"decode: busiest rank's sequences over an even deal (by step time)",
                fmt::format("{:.2f}", x.decode_rank_imbalance)});
  if (r.deployment.mixes_prompt_chunks()) {
    head.add_row({"  decode steps carrying prompt chunks", std::to_string(x.mixed_steps)});
  }
  if (!r.deployment.disaggregated) {
    head.add_row({"  prefill steps in which the other ranks decoded; of them timed by a decoding rank",
                  fmt::format("{}; {}", x.prefill_steps_with_decode, x.prefill_steps_set_by_decode)});
  }
  if (r.deployment.prefill_delay_steps > 0) {
    head.add_row(
        {fmt::format("  decode steps run while prompts waited for the other ranks' (up to {} in a row)",
                     r.deployment.prefill_delay_steps),
         std::to_string(x.prefill_delays)});
  }
  if (r.deployment.prefill.context_parallel_min_tokens > 0) {
    head.add_row({fmt::format("  context-parallel prefill steps (prompts >= {} tokens)",
                              r.deployment.prefill.context_parallel_min_tokens),
                  std::to_string(x.context_parallel_steps)});
  }
  head.add_row({"kernel-model band of prefill / decode steps",
                x.prefill_band.describe() + " / " + x.decode_band.describe()});
  head.add_row({r.run.seeds.size() >= 2 ? "events of the first seed; step shapes costed by all seeds"
                                        : "events; step shapes costed",
                fmt::format("{}; {}", x.events, x.step_shapes_costed)});
}

// A closed loop with a prompt count: whether the benchmark ended within the run.
std::string benchmark_prompts_note(const WorkloadSpec& w, const ServingResult& x) {
  if (x.window_ends_with_prompts) {
    return fmt::format(
        "the benchmark's {} prompts (a client's --num-prompts) all ended: the window ends with the last of "
        "them to end, at {:.1f} s, so its rates are the benchmark's over its own span",
        w.prompts, x.warm_up_s + x.duration_s);
  }
  return fmt::format(
      "the benchmark's {} prompts (a client's --num-prompts) had not all ended by the window's end: the "
      "figures are its first {:.0f} s (a longer --duration lets it end, and the window then ends with it)",
      w.prompts, x.duration_s);
}

// Where the figures come from, and what the run assumed.
void add_run_notes(Table& head, const RunReport& r) {
  const ServingResult& x = r.run.result;
  add_kernel_model_notes(head, kernel_models_of(r.run));
  head.add_note(
      "step bands: time-weighted over the steps simulated; TTFT and TPOT inherit them for their compute "
      "share (queueing is the simulator's own)");
  head.add_note(traffic_note(r.workload));
  if (x.warm_up_s > 0) {
    head.add_note(fmt::format(
        "the first {:.0f} s of arrivals build the deployment up from empty and are served, not counted: "
        "requests and latencies are those that arrived after them; tokens, steps and time those of the "
        "window (--warm-up sets it; its default is assumed long enough for sessions of many turns, and the "
        "row of requests in the system says whether it was)",
        x.warm_up_s));
  }
  if (r.workload.arrival == WorkloadSpec::Arrival::kTrace &&
      r.workload.trace.back().time_s < x.warm_up_s + x.duration_s) {
    head.add_note(fmt::format(
        "the trace's last row comes at {:g} s, before the run's end: its rates and $ count the idle time "
        "after it (--duration {:g} ends the window there; plan and capacity end it there and drain)",
        r.workload.trace.back().time_s, r.workload.trace.back().time_s - x.warm_up_s));
  }
  if (r.workload.prompts > 0) head.add_note(benchmark_prompts_note(r.workload, x));
  head.add_note("output lengths " + output_lengths_source(r.workload));
  head.add_note(routing_note(r.deployment));
  head.add_note(step_overhead_note(r.deployment));
  head.add_note(expert_load_note(r.deployment));
  if (const std::string kernels = engine_kernels_note(r.deployment); !kernels.empty()) head.add_note(kernels);
  if (const std::string layout = attention_layout_note(r.deployment); !layout.empty()) head.add_note(layout);
  const GpuPower& power = r.run.cost.power;
  const SsdTierCost& tier = r.run.cost.ssd_tier;
  if (r.run.cost.known) head.add_note("GPU price " + r.run.cost.provenance);
  if (power.known) {
    head.add_note("GPU rated power " + power.provenance + "; " + kRatedPowerCaveat);
  }
  head.add_note(tier.priced ? "SSD tier price " + tier.provenance + "; the cost per hour includes it"
                            : tier.provenance + "; the cost per hour is the GPUs' alone");
  if (const char* steps = aggregated_steps_assumption(r.deployment)) head.add_note(steps);
  if (const char* first = first_token_assumption(r.deployment)) head.add_note(first);
}

void note_when_none_finished(const ServingResult& x, Table& table) {
  if (x.finished > 0) return;
  table.add_note(
      "no request finished within the run ('-': no figure); a longer --duration lets some through");
}

std::string itl_note(const ServingResult& x) {
  std::string note = fmt::format(
      "{}; over every chunk of the window's requests, finished or not, its percentiles binned to within "
      "{:.1f}%",
      kItlMeaning, GapHistogram::kBinRelativeWidth / 2 * 100);
  if (x.itl_ms.count > 0) note += fmt::format("; the longest {} ms", format_fixed(x.itl_ms.max, 1));
  return note;
}

// `itl_limited`: an ITL limit judges some request, so its figure, each
// request's longest gap, is shown beside the chunks'.
Table latency_table(const ServingResult& x, bool itl_limited) {
  Table latency("Latency of finished requests (ms)", {"metric", "mean", "p50", "p90", "p99"});
  latency.add_row(latency_row("TTFT", x.ttft_ms));
  latency.add_row(latency_row("TPOT (per request)", x.tpot_ms));
  latency.add_row(latency_row("ITL (per streamed chunk)", x.itl_ms));
  if (itl_limited) latency.add_row(latency_row("longest ITL (per request)", x.longest_itl_ms));
  latency.add_row(latency_row("end to end", x.e2e_ms));
  latency.add_row(latency_row("prefill queue wait", x.prefill_wait_ms));
  latency.add_row(latency_row("decode admission wait", x.decode_wait_ms));
  latency.add_note(
      "TPOT: a request's time from its first token to its last over its tokens after the first (as vLLM's "
      "benchmark reports it), its percentiles over requests");
  latency.add_note(itl_note(x));
  if (itl_limited) latency.add_note(longest_itl_column_note());
  note_when_none_finished(x, latency);
  return latency;
}

Table time_breakdown_table(const ServingResult& x) {
  Table breakdown("Where a finished request's time went (mean ms)", {"stage", "ms"});
  breakdown.add_row({"SSD read of cached global KV", finished_mean(x, x.mean_ssd_read_ms)});
  breakdown.add_row({"prefill queue", finished_mean(x, x.prefill_wait_ms.mean)});
  breakdown.add_row({"prefill compute (incl. EP communication)", finished_mean(x, x.mean_prefill_ms)});
  breakdown.add_row({"KV transfer to decode", finished_mean(x, x.mean_transfer_ms)});
  breakdown.add_row({"decode admission queue", finished_mean(x, x.decode_wait_ms.mean)});
  breakdown.add_row({"decode", finished_mean(x, x.mean_decode_ms)});
  breakdown.add_row({"  of prefill + decode: EP communication not hidden by compute",
                     finished_mean(x, x.mean_communication_ms)});
  note_when_none_finished(x, breakdown);
  return breakdown;
}

// About ten of the samples, evenly spaced, the run's first and last among
// them; disaggregated, the prefill pool's KV too (held by prompts until shipped).
Table occupancy_table(const ServingResult& x, bool disaggregated) {
  std::vector<std::string> columns{"time (s)", "decode KV used"};
  if (disaggregated) columns.push_back("prefill KV used");
  columns.insert(columns.end(), {"prefill queue", "decode queue", "decoding", "SWA states in host pool"});
  const std::size_t every = std::max<std::size_t>(1, x.occupancy.size() / 10);
  std::size_t shown = 0;
  for (std::size_t i = 0; i < x.occupancy.size(); i += every) ++shown;
  Table occupancy(fmt::format("Occupancy over time ({} samples of {})", shown, x.occupancy.size()), columns);
  for (std::size_t i = 0; i < x.occupancy.size(); i += every) {
    const OccupancySample& o = x.occupancy[i];
    std::vector<std::string> row{format_fixed(o.time_s, x.duration_s < 100 ? 1 : 0),
                                 fmt::format("{:.1f}%", 100 * o.decode_kv_used_fraction)};
    if (disaggregated) row.push_back(fmt::format("{:.1f}%", 100 * o.prefill_kv_used_fraction));
    row.insert(row.end(), {std::to_string(o.prefill_queue), std::to_string(o.decode_queue),
                           std::to_string(o.decoding), std::to_string(o.host_pool_sessions)});
    occupancy.add_row(row);
  }
  return occupancy;
}

}  // namespace

std::vector<Table> run_tables(const RunReport& r) {
  const ServingResult& x = r.run.result;
  Table head(fmt::format("{} on {} ({} GPUs), workload {}, {}, seed {}", r.model, r.deployment.name, x.gpus,
                         r.workload.name, arrivals_phrase(x.duration_s, x.warm_up_s), r.seed),
             {"quantity", "value"});
  add_traffic_rows(head, r);
  add_cost_rows(head, r);
  add_step_rows(head, r);
  add_run_notes(head, r);
  std::vector<Table> tables{head, latency_table(x, sla_limits_itl(r.deployment.sla, r.workload))};
  if (!x.by_class.empty()) tables.push_back(classes_table(r));
  tables.insert(tables.end(), {time_breakdown_table(x), occupancy_table(x, r.deployment.disaggregated)});
  if (r.run.seeds.size() >= 2) tables.push_back(seeds_table(r));
  return tables;
}

namespace {

// A mix of traffic's classes, each on its own (empty without a mix).
nlohmann::json classes_json(const RunReport& r) {
  nlohmann::json out = nlohmann::json::array();
  const ServingResult& x = r.run.result;
  for (std::size_t i = 0; i < x.by_class.size(); ++i) {
    const ClassOutcome& c = x.by_class[i];
    out.push_back({{"class", c.name},
                   {"share", r.workload.mix[i].share},
                   {"sessions", c.sessions},
                   {"arrived", c.arrived},
                   {"finished", c.finished},
                   {"within_sla", c.within_sla},
                   {"sla",
                    {{"ttft_ms", c.sla.ttft_ms},
                     {"tpot_ms", c.sla.tpot_ms},
                     {"itl_ms", itl_limit_json(c.sla)},
                     {"own", r.workload.mix[i].sla.gives_any()}}},
                   {"priority", r.workload.mix[i].priority},
                   {"ttft_ms", summary_json(c.ttft_ms)},
                   {"tpot_ms", summary_json(c.tpot_ms)},
                   {"itl_ms", summary_json(c.itl_ms)},
                   {"longest_itl_ms", summary_json(c.longest_itl_ms)}});
  }
  return out;
}

}  // namespace

nlohmann::json run_json(const RunReport& r) {
  const ServingResult& x = r.run.result;
  const char* steps = aggregated_steps_assumption(r.deployment);  // null: disaggregated
  const char* first = first_token_assumption(r.deployment);       // null: aggregated
  nlohmann::json occupancy = nlohmann::json::array();
  for (const OccupancySample& o : x.occupancy) {
    occupancy.push_back({{"time_s", o.time_s},
                         {"decode_kv_used_fraction", o.decode_kv_used_fraction},
                         {"prefill_kv_used_fraction", o.prefill_kv_used_fraction},
                         {"prefill_queue", o.prefill_queue},
                         {"decode_queue", o.decode_queue},
                         {"decoding", o.decoding},
                         {"host_pool_sessions", o.host_pool_sessions}});
  }
  return {{"model", r.model},
          {"deployment", r.deployment.name},
          {"workload", r.workload.name},
          {"seed", r.seed},
          {"warm_up_s", x.warm_up_s},
          {"duration_s", x.duration_s},
          {"steady_state", steady_state_json(x)},
          {"gpus", x.gpus},
          {"requests",
           {{"arrived", x.arrived},
            {"finished", x.finished},
            {"in_flight", x.in_flight},
            {"rejected", x.rejected},
            {"rejected_by_reason", x.rejected_by_reason},
            {"trace_turns_held", x.trace_turns_held},
            {"trace_turns_held_mean_s", x.mean_trace_turn_held_s()},
            {"trace_turns_still_held", x.trace_turns_still_held}}},
          {"tokens",
           {{"input_arrived", x.input_tokens_arrived},
            {"input_prefilled", x.input_tokens_prefilled},
            {"input_cached", x.input_tokens_cached},
            {"input_shareable", x.input_tokens_shareable},
            {"input_replayed", x.input_tokens_replayed},
            {"output_generated", x.output_tokens_generated}}},
          {"ttft_ms", summary_json(x.ttft_ms)},
          {"tpot_ms", summary_json(x.tpot_ms)},
          {"itl_ms", summary_json(x.itl_ms)},
          {"longest_itl_ms", summary_json(x.longest_itl_ms)},
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
            {"fraction", x.finished > 0 ? nlohmann::json(x.goodput_fraction) : nlohmann::json(nullptr)},
            {"ttft_ms", r.deployment.sla.ttft_ms},
            {"tpot_ms", r.deployment.sla.tpot_ms},
            {"itl_ms", itl_limit_json(r.deployment.sla)},
            {"misses", sla_misses_json(x.sla_misses)}}},
          {"littles_law",
           {{"mean_in_system", x.mean_in_system},
            {"arrival_rate_per_s", x.arrival_rate_per_s},
            {"mean_sojourn_s", x.mean_sojourn_s}}},
          {"kv_tiers", kv_tiers_json(x.kv_tiers)},
          {"sessions",
           {{"arrived", x.sessions_arrived},
            {"resumed", x.sessions_resumed},
            {"resumed_found_in_ssd_tier", x.resumed_found}}},
          {"ssd_clients_busy_fraction", x.ssd_clients_busy_fraction},
          {"decode_kv_bytes_per_gpu", x.decode_kv_bytes_per_gpu},
          {"cost", cost_json(r.run.cost)},
          {"steps",
           {{"prefill", x.prefill_steps},
            {"context_parallel_prefill", x.context_parallel_steps},
            {"decode", x.decode_steps},
            {"decode_with_prompt_chunks", x.mixed_steps},
            {"prefill_with_decode", x.prefill_steps_with_decode},
            {"prefill_set_by_decode", x.prefill_steps_set_by_decode},
            {"decode_while_prompts_held", x.prefill_delays},
            {"prefill_two_micro_batches", x.prefill_steps_split},
            {"decode_two_micro_batches", x.decode_steps_split},
            {"decode_rank_imbalance", x.decode_rank_imbalance}}},
          {"error_band",
           {{"prefill", error_band_json(x.prefill_band)},
            {"decode", error_band_json(x.decode_band)},
            {"method", kErrorBandMethod}}},
          {"events", x.events},
          {"occupancy", occupancy},
          {"by_class", classes_json(r)},
          {"seeds", seeds_json(r.run)},
          {"provenance",
           {{"step_times", kernel_models_json(kernel_models_of(r.run))},
            {"output_lengths", output_lengths_source(r.workload)},
            {"routing", routing_note(r.deployment)},
            {"step_overhead", step_overhead_note(r.deployment)},
            {"expert_load", expert_load_note(r.deployment)},
            {"aggregated_steps", steps != nullptr ? nlohmann::json(steps) : nlohmann::json()},
            {"first_token", first != nullptr ? nlohmann::json(first) : nlohmann::json()}}}};
}

std::string classes_line(const ServingResult& result, const WorkloadSpec& workload) {
  std::string out;
  for (std::size_t i = 0; i < result.by_class.size(); ++i) {
    const ClassOutcome& c = result.by_class[i];
    const auto p99 = [](const LatencySummary& s) {
      return s.count == 0 ? std::string("-") : format_fixed(s.p99, 1);
    };
    const std::string sla =
        workload.mix[i].sla.gives_any() ? "its SLA of " + limits_phrase(c.sla) : "the SLA";
    const std::string longest =
        c.sla.limits_itl() ? fmt::format(", longest ITL p99 {} ms", p99(c.longest_itl_ms)) : "";
    out += fmt::format("{}{} {} within {} (TTFT p99 {} ms, TPOT p99 {} ms{})", out.empty() ? "" : "; ",
                       c.name, class_within_sla(c), sla, p99(c.ttft_ms), p99(c.tpot_ms), longest);
  }
  return out;
}

nlohmann::json sla_json(const SlaSpec& deployment, const WorkloadSpec& workload) {
  nlohmann::json classes = nlohmann::json::array();
  for (const WorkloadMixClass& c : workload.mix) {
    if (!c.sla.gives_any()) continue;
    const SlaSpec held = held_to(deployment, c.sla);
    classes.push_back({{"class", c.name},
                       {"ttft_ms", held.ttft_ms},
                       {"tpot_ms", held.tpot_ms},
                       {"itl_ms", itl_limit_json(held)}});
  }
  return {{"ttft_ms", deployment.ttft_ms},
          {"tpot_ms", deployment.tpot_ms},
          {"itl_ms", itl_limit_json(deployment)},
          {"classes", classes}};
}

std::string sla_phrase(const SlaSpec& deployment, const WorkloadSpec& workload) {
  std::vector<std::string> own;
  for (const WorkloadMixClass& c : workload.mix) {
    if (c.sla.gives_any())
      own.push_back(fmt::format("{}'s own: {}", c.name, limits_phrase(held_to(deployment, c.sla))));
  }
  if (own.empty()) return limits_phrase(deployment);
  return fmt::format("{} ({})", limits_phrase(deployment), fmt::join(own, "; "));
}

std::string verdict_share_phrase(const WorkloadSpec& workload) {
  return workload.mix.empty() ? "the requests that arrived"
                              : "each class's requests that arrived (pooled over seeds)";
}

std::string pooled_latency_note(const WorkloadSpec& workload) {
  if (!has_class_slas(workload)) return "";
  return "the p99 columns (TTFT, TPOT, ITL and, with an ITL limit, the longest ITL): over every class's "
         "requests together; each request is judged against its class's limits (by class: the line above)";
}

std::string output_token_price(const ServedRun& run, int decimals) {
  if (!run.cost.known) return "unknown";
  return fmt::format("${:.{}f}", run.spread(&SeedOutcome::usd_per_million_output).mean, decimals);
}

namespace {

// The served-run columns, in order; one only where an ITL limit judges.
struct ServedRunColumn {
  const char* header;
  bool longest_itl_only;
};
constexpr std::array<ServedRunColumn, 10> kServedRunColumns{{{"within SLA", false},
                                                             {"TTFT p99 (ms)", false},
                                                             {"TPOT p99 (ms)", false},
                                                             {"ITL p99 (ms)", false},
                                                             {"longest ITL p99 (ms)", true},
                                                             {"tokens/s/GPU out", false},
                                                             {"$ per 1M output tokens", false},
                                                             {"kWh per 1M output tokens", false},
                                                             {"meets SLA", false},
                                                             {"step band, prefill / decode (90%)", false}}};

}  // namespace

std::vector<std::string> with_served_run_columns(std::vector<std::string> leading, bool longest_itl) {
  for (const ServedRunColumn& column : kServedRunColumns) {
    if (longest_itl || !column.longest_itl_only) leading.emplace_back(column.header);
  }
  return leading;
}

bool sla_limits_itl(const SlaSpec& deployment, const WorkloadSpec& workload) {
  return deployment.limits_itl() || std::any_of(workload.mix.begin(), workload.mix.end(),
                                                [](const WorkloadMixClass& c) { return c.sla.limits_itl(); });
}

std::vector<std::string> not_run_cells(const std::string& why, bool longest_itl) {
  std::vector<std::string> cells;
  for (const ServedRunColumn& column : kServedRunColumns) {
    if (longest_itl || !column.longest_itl_only)
      cells.push_back(std::string_view(column.header) == "meets SLA" ? "cannot run: " + why : "-");
  }
  return cells;
}

std::vector<std::string> served_run_cells(const ServedRun& run, double min_within_sla, bool longest_itl,
                                          const std::optional<ServedRun>& confirmation,
                                          bool confirmation_holds) {
  const ServingResult& r = run.result;
  // One seed: its figure; several: the mean, and the least and most in brackets.
  const auto cell = [&run](double SeedOutcome::*figure, const char* format) {
    const SeedSpread s = run.spread(figure);
    const std::string mean = fmt::format(fmt::runtime(format), s.mean);
    if (run.seeds.size() < 2) return mean;
    return fmt::format("{} ({}-{})", mean, fmt::format(fmt::runtime(format), s.min),
                       fmt::format(fmt::runtime(format), s.max));
  };
  std::string within = share_beside_threshold(run.within_sla(), min_within_sla) + "%";
  if (run.seeds.size() > 1) {
    const SeedSpread s = run.spread(&SeedOutcome::within_sla);
    within += fmt::format(" ({}-{})", share_beside_threshold(s.min, min_within_sla),
                          share_beside_threshold(s.max, min_within_sla));
  }
  std::vector<std::string> cells{within, cell(&SeedOutcome::ttft_p99_ms, "{:.0f}"),
                                 cell(&SeedOutcome::tpot_p99_ms, "{:.1f}"),
                                 cell(&SeedOutcome::itl_p99_ms, "{:.1f}")};
  if (longest_itl) cells.push_back(cell(&SeedOutcome::longest_itl_p99_ms, "{:.1f}"));
  cells.insert(cells.end(),
               {cell(&SeedOutcome::output_tokens_per_s_per_gpu, "{:.0f}"),
                run.cost.known ? cell(&SeedOutcome::usd_per_million_output, "${:.2f}") : "unknown",
                run.cost.power.known ? cell(&SeedOutcome::kwh_per_million_output, "{:.2f}") : "unknown",
                confirmation ? confirmed_cell(run, min_within_sla, *confirmation, confirmation_holds)
                             : meets_cell(run, min_within_sla),
                error_band_cell(r.prefill_band) + " / " + error_band_cell(r.decode_band)});
  return cells;
}

nlohmann::json sla_verdict_json(const ServedRun& run, double min_within_sla) {
  return {{"meets_sla", run.meets_sla(min_within_sla)},
          {"seeds_meeting_sla", run.seeds_meeting_sla(min_within_sla)}};
}

nlohmann::json served_run_json(const ServedRun& run) {
  const ServingResult& r = run.result;
  nlohmann::json classes = nlohmann::json::array();
  const std::vector<double> shares = run.class_within_sla();
  for (std::size_t i = 0; i < shares.size() && i < r.by_class.size(); ++i)
    classes.push_back({{"class", r.by_class[i].name}, {"within_sla", shares[i]}});
  return {{"within_sla", run.within_sla()},
          {"class_within_sla", classes},
          {"sla_misses", sla_misses_json(run.misses())},  // pooled over the seeds
          {"window_s", r.duration_s},  // of arrivals measured (a trace's: until its last row was sent)
          {"requests",
           {{"arrived", r.arrived},
            {"finished", r.finished},
            {"rejected", r.rejected},
            {"trace_turns_held", r.trace_turns_held}}},
          {"ttft_ms", {{"p50", r.ttft_ms.p50}, {"p99", r.ttft_ms.p99}}},
          {"tpot_ms", {{"p50", r.tpot_ms.p50}, {"p99", r.tpot_ms.p99}}},
          {"itl_ms", {{"p50", r.itl_ms.p50}, {"p99", r.itl_ms.p99}, {"max", r.itl_ms.max}}},
          {"longest_itl_ms", {{"p50", r.longest_itl_ms.p50}, {"p99", r.longest_itl_ms.p99}}},
          {"throughput_tokens_per_s_per_gpu",
           {{"input", r.input_tokens_per_s_per_gpu}, {"output", r.output_tokens_per_s_per_gpu}}},
          {"cost", cost_json(run.cost)},
          {"error_band",
           {{"prefill", error_band_json(r.prefill_band)}, {"decode", error_band_json(r.decode_band)}}},
          {"seeds", seeds_json(run)},
          {"over_seeds", over_seeds_json(run)}};
}

std::string arrivals_phrase(double duration_s, double warm_up_s) {
  if (warm_up_s <= 0) return fmt::format("{:.0f} simulated s of arrivals", duration_s);
  return fmt::format("{:.0f} simulated s of arrivals measured after {:.0f} s of warm-up", duration_s,
                     warm_up_s);
}

std::string arrivals_phrase(const ServeOptions& options, const WorkloadSpec& workload) {
  const std::string asked = arrivals_phrase(options.duration_s, warm_up_of(options, workload));
  if (workload.prompts <= 0) return asked;
  return fmt::format("the benchmark's {} prompts to the last (at most {})", workload.prompts, asked);
}

std::string unsettled_note(const std::vector<std::pair<std::string, const ServedRun*>>& runs) {
  std::vector<std::string> unsettled;
  bool traces = false;
  for (const auto& [label, run] : runs) {
    if (const int64_t n = run->seeds_unsettled(); n > 0)
      unsettled.push_back(fmt::format("{} ({} of {} seeds)", label, n, run->seeds.size()));
    traces = traces || run->result.replays_trace;
  }
  if (unsettled.empty()) return {};
  return fmt::format(
      "not settled: the requests in the system of {} were still moving over the measured window (dropping "
      "the start MSER-5 picks would move their mean over {:.0f}%, or a line through them rises over {:.0f}% "
      "or falls over {:.0f}%, beyond their noise, |t| > {:g}): a deployment still filling up (a longer "
      "--warm-up) or overloaded, whose $ and SLA verdicts are no steady state's{}",
      fmt::join(unsettled, ", "), 100 * SteadyState::kSettledShift, 100 * SteadyState::kSettledRise,
      100 * SteadyState::kSettledFall, SteadyState::kRiseT,
      traces ? "; or, replaying a trace, the trace's own load rising or falling as its sessions start and end"
             : "");
}

std::string held_trace_rows_note(const std::vector<std::pair<std::string, const ServedRun*>>& runs) {
  std::vector<std::string> held;
  for (const auto& [label, run] : runs) {
    const ServingResult& x = run->result;
    if (x.trace_turns_held == 0) continue;
    held.push_back(fmt::format("{} {} of {} ({:.1f} s on average)", label, x.trace_turns_held, x.arrived,
                               x.mean_trace_turn_held_s()));
  }
  if (held.empty()) return {};
  return fmt::format(
      "a trace's session sends a turn once its previous turn is answered; rows that waited for it: {}. "
      "Where its rows wait, the trace's sessions, not its rate, set the load (its requests/s stops rising "
      "with the rate), and the window of arrivals lasts until its last row is sent",
      fmt::join(held, "; "));
}

std::string confirmation_phrase(const ServedRun& run) {
  if (!run.asks_settling()) return fmt::format("{:.1f}% within", 100 * run.within_sla());
  const char* settling = run.seeds_unsettled() == 0          ? "settled"
                         : run.seeds_unsettled_at_end() == 0 ? "settled in its second half"
                                                             : "still moving in its second half";
  return fmt::format("{:.1f}% within, {}", 100 * run.within_sla(), settling);
}

std::string longer_window(const ServedRun& confirmation, std::string_view seconds_of) {
  const ServingResult& r = confirmation.result;
  if (r.window_ends_with_prompts) return "the benchmark's prompts, until the last ended";
  if (!r.window_ends_with_trace) return fmt::format("{:.0f} s{}", r.duration_s, seconds_of);
  return r.warm_up_s > 0 ? "the trace's rows after the warm-up" : "the whole trace";
}

nlohmann::json confirmation_json(const ServedRun& run, double min_within_sla, bool holds) {
  nlohmann::json out = {{"duration_s", run.result.duration_s},
                        {"within_sla", run.within_sla()},
                        {"meets_sla", run.meets_sla(min_within_sla)},
                        {"settled", run.seeds_unsettled() == 0},
                        {"settled_in_second_half", run.seeds_unsettled_at_end() == 0},
                        {"cost", cost_json(run.cost)},
                        {"holds", holds}};
  out["window_ends_with_trace"] = run.result.window_ends_with_trace;      // a trace's last row ended it
  out["window_ends_with_prompts"] = run.result.window_ends_with_prompts;  // a benchmark's last prompt did
  return out;
}

std::string seeds_phrase(const ServeOptions& options) {
  if (options.seeds < 2) return fmt::format("seed {}", options.seed);
  return fmt::format(
      "seeds {}-{} (each figure the mean over them, least-most in brackets; within SLA pooled over their "
      "requests; the other figures are seed {}'s)",
      options.seed, options.seed + static_cast<uint64_t>(options.seeds) - 1, options.seed);
}

void add_kernel_model_use(std::vector<KernelModelUse>& uses, const std::string& label,
                          const std::string& gpu) {
  auto use =
      std::find_if(uses.begin(), uses.end(), [&](const KernelModelUse& u) { return u.label == label; });
  if (use == uses.end()) use = uses.insert(uses.end(), {label, {}});
  if (std::find(use->gpus.begin(), use->gpus.end(), gpu) == use->gpus.end()) use->gpus.push_back(gpu);
}

void collect_kernel_models(const ServedRun& run, std::vector<KernelModelUse>& uses) {
  add_kernel_model_use(uses, run.prefill_kernel_model, run.prefill_gpu);
  add_kernel_model_use(uses, run.decode_kernel_model, run.decode_gpu);
}

std::vector<KernelModelUse> kernel_models_of(const ServedRun& run) {
  std::vector<KernelModelUse> uses;
  collect_kernel_models(run, uses);
  return uses;
}

nlohmann::json kernel_models_json(const std::vector<KernelModelUse>& uses) {
  nlohmann::json out = nlohmann::json::array();
  for (const KernelModelUse& u : uses) out.push_back({{"gpus", u.gpus}, {"label", u.label}});
  return out;
}

const char* first_token_assumption(const DeploymentSpec& deployment) {
  return deployment.disaggregated ? kDecodeSideFirstTokenAssumption : nullptr;
}

const char* aggregated_steps_assumption(const DeploymentSpec& deployment) {
  if (deployment.disaggregated) return nullptr;
  return deployment.mixes_prompt_chunks() ? kMixedStepAssumption : kBesidePromptsAssumption;
}

std::string itl_column_note() {
  return std::string(kItlMeaning) + "; its percentiles over every chunk of the requests that arrived";
}

std::string step_band_column_note() {
  return std::string("step band: over the steps each run ran, on the share of their time it covers; ") +
         kErrorBandMethod +
         "; published: the band is the priors' error on published kernel figures, not a fit to our "
         "measurements; none: no kernel class of that GPU has a band; no steps: the run ran no step of that "
         "kind (every prompt mixed into decode steps, which the decode band covers)";
}

std::string misses_phrase(const ServedRun& run) {
  const SlaMisses m = run.misses();
  const double arrived = static_cast<double>(run.arrived());
  std::vector<std::pair<int64_t, std::string>> parts;
  for (const auto& [count, what] : {std::pair{m.unfinished, "unfinished"}, std::pair{m.ttft, "over TTFT"},
                                    std::pair{m.tpot, "over TPOT"}, std::pair{m.itl, "over longest ITL"}}) {
    if (count > 0) parts.emplace_back(count, what);
  }
  std::stable_sort(parts.begin(), parts.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (const auto& [count, what] : parts) {
    const double pct = 100 * static_cast<double>(count) / arrived;
    out.push_back(pct < 0.05 ? "<0.1% " + what : fmt::format("{:.1f}% {}", pct, what));
  }
  return fmt::format("{}", fmt::join(out, ", "));
}

std::string longest_itl_column_note() {
  return "longest ITL: each finished request's longest gap between its streamed chunks, its worst stall "
         "(what an ITL limit judges: run, plan and capacity --itl-ms); a mean TPOT hides a prompt step that "
         "froze the stream once";
}

std::string misses_note() {
  return "meets SLA, where not: what the requests that missed it missed, as shares of those that arrived "
         "(pooled over the seeds): over a limit (each against its own: its class's in a mix), or unfinished "
         "(in flight at the run's end, or rejected); a request may pass over several limits";
}

void add_kernel_model_notes(Table& table, const std::vector<KernelModelUse>& kernel_models) {
  // Several GPUs may share a label: each note names the GPUs it is about.
  for (const KernelModelUse& u : kernel_models) {
    table.add_note(
        fmt::format("step times on {} from the kernel model, {}", fmt::join(u.gpus, ", "), u.label));
  }
}

void add_served_run_notes(Table& table, const std::vector<KernelModelUse>& kernel_models) {
  add_kernel_model_notes(table, kernel_models);
  table.add_note(std::string(kChanceRoutingAssumption) +
                 " (each pool's routing_skew and redundant experts, as its deployment says); " +
                 kGroupTokensAssumption);
  table.add_note(
      "$ per 1M output tokens charges the whole deployment's cost over the measured window to output tokens: "
      "its GPUs, at each profile's price (unknown where no public price exists), and its SSD tier at steady "
      "state (sessions/s x a session's global KV after its last turn x the time it is held: the retention, "
      "less where resumed sessions come back sooner or a tier of bounded size fills first, which is paid for "
      "whole; at the deployment's $ per TB-month)");
  table.add_note(
      std::string("kWh per 1M output tokens: the GPUs at each profile's rated power (power_watts) over "
                  "the measured window, ") +
      kRatedPowerCaveat);
}

nlohmann::json kv_tiers_json(const KvTierCounters& c) {
  return {{"global_hits", c.global_hits},
          {"global_misses", c.global_misses},
          {"swa_hits", c.swa_hits},
          {"swa_misses", c.swa_misses},
          {"swa_evictions", c.swa_evictions}};
}

std::string p50_p99(const LatencySummary& s, int decimals) {
  return s.count == 0 ? std::string("-")
                      : fmt::format("{} / {}", format_fixed(s.p50, decimals), format_fixed(s.p99, decimals));
}

}  // namespace v41sim
