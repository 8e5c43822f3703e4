#include "sim/report/study_summary.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace v41sim {
namespace {

using nlohmann::json;

// "NVIDIA H200 SXM 141GB" -> "H200": the first word after the vendor.
std::string short_gpu(const std::string& name) {
  const std::size_t start = name.rfind("NVIDIA ", 0) == 0 ? 7 : 0;
  const std::size_t end = name.find(' ', start);
  return name.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

int64_t largest(const json& rows, const char* key) {
  int64_t most = 0;
  for (const json& r : rows) most = std::max(most, r.at(key).get<int64_t>());
  return most;
}

void add_claims(Table& t, const json& claims) {
  for (const json& c : claims) {
    t.add_row({c.at("statement").get<std::string>(), c.at("verdict_text").get<std::string>(),
               "Claims of the seed article"});
  }
}

void add_sessions(Table& t, const json& fits) {
  const int64_t context = largest(fits, "context_tokens");
  std::vector<std::string> parts;
  int64_t gpus = 0, ep = 0;
  for (const json& f : fits) {
    if (f.at("context_tokens").get<int64_t>() != context) continue;
    gpus = f.at("gpus").get<int64_t>();
    ep = f.at("ep").get<int64_t>();
    parts.push_back(
        fmt::format("{} {}", short_gpu(f.at("gpu").get<std::string>()), f.at("sessions").get<int64_t>()));
  }
  t.add_row({fmt::format("{}-token sessions that {} GPUs hold (EP {}, released weights)", context, gpus, ep),
             fmt::format("{}", fmt::join(parts, ", ")), "Memory fit"});
}

void add_decode_steps(Table& t, const json& steps) {
  json decode = json::array();
  for (const json& s : steps) {
    if (s.at("phase") == "decode") decode.push_back(s);
  }
  if (decode.empty()) return;
  const int64_t context = largest(decode, "context");
  std::vector<std::string> parts;
  int64_t batch = 0;
  for (const json& s : decode) {
    if (s.at("context").get<int64_t>() != context) continue;
    batch = s.at("batch").get<int64_t>();
    const json& band = s.at("error_band");
    const double ms = s.at("total_time_us").get<double>() / 1e3;
    const int64_t drafts = s.value("drafts_verified", int64_t{0});
    std::vector<std::string> asides;
    if (drafts > 0) {
      asides.push_back(fmt::format("{} drafts: {:.1f} ms an output token", drafts,
                                   ms / s.at("tokens_per_sequence").get<double>()));
    }
    // A step whose sequences' KV one GPU cannot hold is timed all the same; the brief says so.
    const json& memory = s.at("kv_memory");
    if (!memory.at("fits").get<bool>()) {
      asides.push_back(fmt::format("past its memory: KV for {} of the {} sequences",
                                   memory.at("sequences_held_at_context").get<int64_t>(), batch));
    }
    parts.push_back(fmt::format(
        "{} {:.1f} ms{}{}", short_gpu(s.at("gpu").get<std::string>()), ms,
        band.at("known").get<bool>() ? fmt::format(" ±{:.0f}%", band.at("pct_at_90").get<double>())
                                     : std::string(),
        asides.empty() ? std::string() : fmt::format(" ({})", fmt::join(asides, "; "))));
  }
  t.add_row({fmt::format("decode step, batch {}, context {} (kernel model; band at 90%; drafts as serving "
                         "chooses them)",
                         batch, context),
             fmt::format("{}", fmt::join(parts, ", ")), "Step times"});
}

// Whether splitting a step into two overlapped micro-batches pays, per phase,
// at the largest context: on how many GPU profiles it is faster.
void add_overlap(Table& t, const json& steps) {
  std::vector<std::string> parts;
  for (const char* phase : {"decode", "prefill"}) {
    json rows = json::array();
    for (const json& s : steps) {
      if (s.at("phase") == phase) rows.push_back(s);
    }
    if (rows.empty()) continue;
    const int64_t context = largest(rows, "context");
    int faster = 0, profiles = 0;
    double ratio_sum = 0;
    for (const json& s : rows) {
      if (s.at("context").get<int64_t>() != context) continue;
      const double ratio = s.at("two_micro_batches_us").get<double>() / s.at("total_time_us").get<double>();
      ++profiles;
      faster += ratio < 1.0 ? 1 : 0;
      ratio_sum += ratio;
    }
    parts.push_back(
        fmt::format("{} at {} tokens: faster on {} of {} GPU profiles (mean {:.2f}x the one-batch time)",
                    phase, context, faster, profiles, ratio_sum / profiles));
  }
  t.add_row({"two overlapped micro-batches instead of one batch", fmt::format("{}", fmt::join(parts, "; ")),
             "Step times"});
}

// The first context sweep (the first GPU's) from its shortest session to its
// longest: what changes with context.
void add_context(Table& t, const json& sweeps) {
  if (sweeps.empty()) return;
  const json& sweep = sweeps.front();
  const json& first = sweep.at("points").front();
  const json& last = sweep.at("points").back();
  const auto both = [&](const auto& format) { return fmt::format("{} -> {}", format(first), format(last)); };
  std::vector<std::string> parts{
      "sessions per decode GPU " +
          both([](const json& p) { return std::to_string(p.at("sessions_per_decode_gpu").get<int64_t>()); }),
      "first token of one prompt alone " + both([](const json& p) {
        return p.contains("lone_ttft_ms") ? fmt::format("{:.2f} s", p.at("lone_ttft_ms").get<double>() / 1e3)
                                          : std::string("not served");
      })};
  if (first.contains("decode") && last.contains("decode")) {
    parts.push_back(
        fmt::format("decode batch per GPU within TPOT {} ms{} ", sweep.at("tpot_limit_ms").get<double>(),
                    sweep.at("max_batch_per_gpu").get<int64_t>() > 0 ? "" : " (no engine batch limit)") +
        both([](const json& p) {
          const json& d = p.at("decode");
          return fmt::format("{} ({})", d.at("batch_per_gpu").get<int64_t>(),
                             d.at("bound").get<std::string>());
        }));
  }
  if (first.contains("cost") && last.contains("cost") && first.at("cost").at("known").get<bool>() &&
      last.at("cost").at("known").get<bool>()) {
    const auto dollars = [](const char* key) {
      return [key](const json& p) { return fmt::format("${:.2f}", p.at("cost").at(key).get<double>()); };
    };
    parts.push_back("$ per 1M output tokens " + both(dollars("usd_per_million_output_decode_only")) +
                    " with every prefix cached, " + both(dollars("usd_per_million_output_prompt_included")) +
                    " with every prompt prefilled");
    const auto share = [](const json& p) { return p.at("cost").value("tier_pays_at_return_share", 0.0); };
    if (share(first) > 0 && share(last) > 0) {
      parts.push_back(
          fmt::format("the SSD tier pays for itself if {} of sessions come back within its retention",
                      both([&](const json& p) { return fmt::format("{:.2g}%", 100 * share(p)); })));
    }
  }
  const int64_t shortest = first.at("context").get<int64_t>();
  const int64_t longest = last.at("context").get<int64_t>();
  t.add_row({fmt::format("sessions of {} to {} tokens on {} ({} output tokens each)", shortest, longest,
                         sweep.at("deployment").get<std::string>(), sweep.at("output_tokens").get<int64_t>()),
             fmt::format("{}", fmt::join(parts, "; ")),
             fmt::format("From {} to {} tokens of context", shortest, longest)});
}

// A plan row ran with more than one seed: its figures are their means.
bool over_seeds(const json& row) {
  return row.contains("over_seeds") && row.at("over_seeds").at("count").get<int64_t>() > 1;
}

// " [least-most over n seeds]" where the row ran several, else nothing.
std::string seed_range(const json& row, const char* figure, const char* format) {
  if (!over_seeds(row)) return "";
  const json& s = row.at("over_seeds").at(figure);
  return fmt::format(" [{}-{} over {} seeds]", fmt::format(fmt::runtime(format), s.at("min").get<double>()),
                     fmt::format(fmt::runtime(format), s.at("max").get<double>()),
                     row.at("over_seeds").at("count").get<int64_t>());
}

// A plan row's price: "$0.66 per 1M output tokens" (the mean over its seeds,
// with their range), or why there is none.
std::string price(const json& row) {
  const json& cost = row.at("cost");
  if (!cost.at("known").get<bool>()) return "no public GPU price";
  const double usd = over_seeds(row)
                         ? row.at("over_seeds").at("usd_per_million_output").at("mean").get<double>()
                         : cost.at("usd_per_million_output_tokens").get<double>();
  return fmt::format("${:.2f} per 1M output tokens{}", usd,
                     seed_range(row, "usd_per_million_output", "${:.2f}"));
}

// A plan row's p99 of a latency ("tpot", "ttft", "itl" or "longest_itl") in ms, `format` its
// number (the mean over its seeds, with their range).
std::string p99_ms(const json& row, const std::string& latency, const char* format) {
  const std::string over = latency + "_p99_ms";
  const double ms = over_seeds(row) ? row.at("over_seeds").at(over).at("mean").get<double>()
                                    : row.at(latency + "_ms").at("p99").get<double>();
  return fmt::format(fmt::runtime(format), ms) + " ms" + seed_range(row, over.c_str(), format);
}
std::string tpot_p99(const json& row) { return p99_ms(row, "tpot", "{:.1f}"); }
std::string ttft_p99(const json& row) { return p99_ms(row, "ttft", "{:.0f}"); }

// ", not within the SLA over 1800 s" for a plan row within it over its
// window whose longer run did not hold it; else nothing.
std::string not_held(const json& row) {
  if (!row.contains("confirmation") || row.at("confirmation").at("holds").get<bool>()) return "";
  return fmt::format(", not within the SLA over {:.0f} s",
                     row.at("confirmation").at("duration_s").get<double>());
}

// The decode frontier's Pareto points: which deployments hold them (their
// batches), and the cheapest per output token among them.
void add_frontier(Table& t, const json& report) {
  std::vector<std::string> holders, unpriced;
  std::string cheapest;
  double cheapest_usd = 0;
  int64_t context = 0;
  for (const json& f : report.at("frontiers")) {
    context = f.at("context").get<int64_t>();
    std::vector<std::string> batches;
    for (const json& p : f.at("points")) {
      const json& usd = p.at("usd_per_million_output_tokens");
      if (usd.is_null()) {  // ranked against its own GPU only: not a buyer's frontier point
        const std::string gpu = f.at("decode_gpu").get<std::string>();
        if (std::find(unpriced.begin(), unpriced.end(), gpu) == unpriced.end()) unpriced.push_back(gpu);
        continue;
      }
      if (!p.at("pareto").get<bool>()) continue;
      batches.push_back(std::to_string(p.at("batch_per_gpu").get<int64_t>()));
      if (!cheapest.empty() && usd.get<double>() >= cheapest_usd) continue;
      cheapest_usd = usd.get<double>();
      const int64_t batch = p.at("batch_per_gpu").get<int64_t>();
      const int64_t limit = f.at("max_batch_per_gpu").get<int64_t>();
      cheapest = fmt::format(
          "{} at batch {} (${:.3f} per 1M output tokens, {:.0f} tokens/s per user{})",
          f.at("deployment").get<std::string>(), batch, cheapest_usd,
          p.at("tokens_per_s_per_user").get<double>(),
          limit > 0 && batch > limit
              ? fmt::format("; above the deployment's batch limit of {}: what the GPU allows", limit)
              : std::string());
    }
    if (!batches.empty()) {
      holders.push_back(
          fmt::format("{} (batch {})", f.at("deployment").get<std::string>(), fmt::join(batches, ", ")));
    }
  }
  if (holders.empty()) return;
  t.add_row(
      {fmt::format("decode frontier at {} tokens: the points no other beats on user speed and $ per token",
                   context),
       fmt::format("{}; cheapest of them: {}{}", fmt::join(holders, "; "), cheapest,
                   unpriced.empty()
                       ? std::string()
                       : fmt::format("; not ranked (no public price): {}", fmt::join(unpriced, ", "))),
       fmt::format("Decode frontier at {} tokens", context)});
}

// Its price and latencies: TPOT, ITL, and the p99 of each request's longest
// gap (the stall a mean TPOT hides, where aggregated and split pools part most).
std::string served(const json& row) {
  return fmt::format("{} ({}, TPOT p99 {}, ITL p99 {}, longest ITL p99 {}{})",
                     row.at("deployment").get<std::string>(), price(row), tpot_p99(row),
                     p99_ms(row, "itl", "{:.1f}"), p99_ms(row, "longest_itl", "{:.1f}"), not_held(row));
}

bool meets_sla(const json& row) { return row.contains("meets_sla") && row.at("meets_sla").get<bool>(); }

// The first row that meets the SLA (plan ranks them first, cheapest first).
const json* cheapest_within(const json& plan) {
  for (const json& row : plan.at("rows")) {
    if (meets_sla(row)) return &row;
  }
  return nullptr;
}

// The GPU both pools of a row run on; empty where they differ.
std::string one_gpu(const json& row) {
  if (!row.contains("decode") || !row.contains("prefill")) return "";
  const json& gpu = row.at("decode").at("gpu");
  return row.at("prefill").at("gpu") == gpu ? gpu.get<std::string>() : std::string();
}

// The layout plan's question on each GPU it tried for both pools (GPUs in
// the order of their cheapest row): the cheapest one-pool variant within the
// SLA against the cheapest prefill/decode split, on that GPU alone.
void add_pool_or_split(Table& t, const json& layouts) {
  std::vector<std::string> gpus;
  for (const json& row : layouts.at("rows")) {
    const std::string gpu = one_gpu(row);
    if (!gpu.empty() && std::find(gpus.begin(), gpus.end(), gpu) == gpus.end()) gpus.push_back(gpu);
  }
  std::vector<std::string> parts;
  for (const std::string& gpu : gpus) {
    const auto cheapest = [&](bool split) -> std::string {
      for (const json& row : layouts.at("rows")) {
        if (meets_sla(row) && one_gpu(row) == gpu && row.at("disaggregated").get<bool>() == split)
          return served(row);
      }
      return "none within the SLA";
    };
    parts.push_back(fmt::format("on {}: one pool {}; split {}", gpu, cheapest(false), cheapest(true)));
  }
  if (parts.empty()) return;
  t.add_row({"one pool or prefill/decode split (the same GPU for both, the same SLA)",
             fmt::format("{}", fmt::join(parts, " | ")), "Aggregated or disaggregated"});
}

void add_plans(Table& t, const json& report) {
  const json& plan = report.at("plan");
  const json* best = cheapest_within(plan);
  t.add_row(
      {fmt::format("cheapest deployment within the SLA under '{}'", plan.at("workload").get<std::string>()),
       best ? served(*best) : "no variant meets the SLA", "The cheapest deployment within the SLA"});
  add_pool_or_split(t, report.at("plan_layouts"));
}

// The plan's EP question on each GPU: the same GPUs as several instances of
// a smaller EP group or as one group (the pool that serves decode).
void add_ep_choices(Table& t, const json& plan) {
  const auto instances = [](const json& row) { return row.at("decode").at("instances").get<int64_t>(); };
  const auto pool_gpus = [&](const json& row) {
    return instances(row) * row.at("decode").at("ep").get<int64_t>();
  };
  const auto shown = [&](const json& row) {
    return fmt::format("{} x EP {} {:.1f}% within, TPOT p99 {}, {}{}", instances(row),
                       row.at("decode").at("ep").get<int64_t>(), 100 * row.at("within_sla").get<double>(),
                       tpot_p99(row), price(row), not_held(row));
  };
  std::vector<std::string> parts;
  for (const json& one : plan.at("rows")) {
    if (!one.contains("cost") || instances(one) != 1) continue;
    std::vector<std::string> choices;
    for (const json& many : plan.at("rows")) {
      if (!many.contains("cost") || instances(many) == 1) continue;
      if (many.at("decode").at("gpu") != one.at("decode").at("gpu") || pool_gpus(many) != pool_gpus(one))
        continue;
      choices.push_back(shown(many));
    }
    if (choices.empty()) continue;
    choices.push_back(shown(one));
    parts.push_back(fmt::format("{} on {} GPUs: {}", one.at("decode").at("gpu").get<std::string>(),
                                pool_gpus(one), fmt::join(choices, " / ")));
  }
  if (parts.empty()) return;
  t.add_row({"the same GPUs as several instances of a smaller EP group, or as one group",
             fmt::format("{}", fmt::join(parts, "; ")), "The cheapest deployment within the SLA"});
}

// "workloads/deployments/h200_agg_8.yaml" -> "h200_agg_8".
std::string file_stem(const std::string& path) {
  const std::string name = path.substr(path.find_last_of('/') + 1);
  return name.substr(0, name.rfind('.'));
}

// The layout plan's aggregated rows: on each GPU the cheapest that mixes
// prompt chunks into decode steps (rows come cheapest first), against the
// same pool running prompts in steps of their own, without a prefill delay
// and, where the plan tried one, with it.
void add_aggregated_steps(Table& t, const json& layouts) {
  const auto same_pool = [](const json& a, const json& b) { return a.at("decode") == b.at("decode"); };
  const auto delayed = [&layouts, &same_pool](const json& own) -> std::string {
    for (const json& held : layouts.at("rows")) {
      if (held.value("prefill_delay_steps", int64_t{0}) == 0 || !held.contains("cost")) continue;
      if (!same_pool(own, held)) continue;
      return fmt::format(
          ", with a prefill delay of up to {} steps {} ({:.1f}% within, TPOT p99 {}, TTFT p99 {}{})",
          held.at("prefill_delay_steps").get<int64_t>(), price(held),
          100 * held.at("within_sla").get<double>(), tpot_p99(held), ttft_p99(held), not_held(held));
    }
    return "";
  };
  std::vector<std::string> parts;
  std::vector<std::string> gpus_done;
  for (const json& mixed : layouts.at("rows")) {
    if (!mixed.contains("aggregated_steps") || mixed.at("aggregated_steps") != "mixed") continue;
    if (!mixed.contains("cost")) continue;  // not run
    const std::string gpu = mixed.at("decode").at("gpu").get<std::string>();
    if (std::find(gpus_done.begin(), gpus_done.end(), gpu) != gpus_done.end()) continue;
    for (const json& own : layouts.at("rows")) {
      if (!own.contains("aggregated_steps") || own.at("aggregated_steps") != "prefill_first") continue;
      if (own.value("prefill_delay_steps", int64_t{0}) != 0) continue;
      if (!own.contains("cost") || !same_pool(mixed, own)) continue;
      const json& pool = mixed.at("decode");
      parts.push_back(fmt::format("{} x {} {}: mixed {} (TPOT p99 {}{}), own steps {} (TPOT p99 {}{}){}",
                                  pool.at("instances").get<int64_t>(), pool.at("ep").get<int64_t>(), gpu,
                                  price(mixed), tpot_p99(mixed), not_held(mixed), price(own), tpot_p99(own),
                                  not_held(own), delayed(own)));
      gpus_done.push_back(gpu);
      break;
    }
  }
  if (parts.empty()) return;
  t.add_row(
      {"one pool: prompt chunks mixed into decode steps, or prompts in steps of their own (held for "
       "the other ranks' or not)",
       fmt::format("{}", fmt::join(parts, "; ")), "Aggregated or disaggregated"});
}

// The capacity section's verdicts, one per deployment it asked.
void add_capacity(Table& t, const json& capacities) {
  if (capacities.empty()) return;
  std::vector<std::string> parts;
  for (const json& c : capacities) {
    parts.push_back(
        fmt::format("{}: {}", c.at("deployment").get<std::string>(), c.at("verdict").get<std::string>()));
  }
  t.add_row({fmt::format("traffic served within the SLA under '{}'",
                         capacities.front().at("workload").get<std::string>()),
             fmt::format("{}", fmt::join(parts, "; ")), "How much traffic"});
}

// How each class of the mix fared against its own limits, deployment by deployment.
void add_mix(Table& t, const json& runs) {
  if (runs.empty()) return;
  std::vector<std::string> parts;
  for (const json& run : runs) {
    std::vector<std::string> classes;
    for (const json& c : run.at("by_class")) {
      const auto arrived = c.at("arrived").get<int64_t>();
      classes.push_back(arrived == 0 ? c.at("class").get<std::string>() + " -"
                                     : fmt::format("{} {:.1f}%", c.at("class").get<std::string>(),
                                                   100.0 * c.at("within_sla").get<double>() /
                                                       static_cast<double>(arrived)));
    }
    parts.push_back(fmt::format("{}: {}", run.at("deployment").get<std::string>(), fmt::join(classes, ", ")));
  }
  t.add_row(
      {fmt::format("each class of '{}' within its own SLA", runs.front().at("workload").get<std::string>()),
       fmt::format("{}", fmt::join(parts, "; ")), "A mix of traffic on one deployment"});
}

// Each KV-tier setting the report ran, cheapest within the SLA first.
void add_kv_tiers(Table& t, const json& plan) {
  std::vector<std::string> parts;
  for (const json& row : plan.at("rows")) {
    if (!row.contains("kv_tiers") || !row.contains("within_sla")) continue;
    const json& kv = row.at("kv_tiers");
    const double hours = kv.at("retention_h").get<double>();
    const double pool = kv.at("swa_pool_fraction").get<double>();
    parts.push_back(fmt::format(
        "{}, {}: {}, {:.1f}% within the SLA",
        hours > 0 ? fmt::format("SSD tier {:g} h", hours) : std::string("no SSD tier"),
        pool > 0 ? fmt::format("window pool {:g}% of DRAM", 100 * pool) : std::string("no window pool"),
        price(row), 100 * row.at("within_sla").get<double>()));
  }
  if (parts.empty()) return;
  t.add_row(
      {fmt::format("what the KV tiers are worth under '{}' ({})", plan.at("workload").get<std::string>(),
                   file_stem(plan.at("base_deployments").at(0).get<std::string>())),
       fmt::format("{}", fmt::join(parts, "; ")), "What the KV tiers are worth"});
  if (plan.contains("by_size")) {
    const json& sized = plan.at("by_size");
    std::vector<std::string> sizes;
    for (const json& row : sized.at("rows")) {
      if (!row.contains("within_sla")) continue;
      const json& capacity = row.at("kv_tiers").at("ssd_capacity_tb");
      sizes.push_back(fmt::format(
          "{}: {}, {:.1f}% within the SLA",
          capacity.is_null() ? std::string("unbounded") : fmt::format("{:g} TB", capacity.get<double>()),
          price(row), 100 * row.at("within_sla").get<double>()));
    }
    t.add_row({fmt::format("how large an SSD tier under '{}' ({}, kept at most {:g} h)",
                           sized.at("workload").get<std::string>(),
                           file_stem(sized.at("base_deployments").at(0).get<std::string>()),
                           sized.at("rows").at(0).at("kv_tiers").at("retention_h").get<double>()),
               fmt::format("{}", fmt::join(sizes, "; ")), "What the KV tiers are worth"});
  }
  if (!plan.contains("ssd_tier_by_model")) return;
  const json& tier = plan.at("ssd_tier_by_model");
  std::vector<std::string> models;
  for (const json& m : tier.at("models")) {
    const double share = m.at("of_gpu_usd_per_hour").get<double>();
    models.push_back(
        fmt::format("{} {:.1f} TB (${:.2f} per hour{})", m.at("model").get<std::string>(),
                    m.at("steady_state_bytes").get<double>() / 1e12, m.at("usd_per_hour").get<double>(),
                    share > 0 ? fmt::format(", {:.1f}% of the GPUs'", 100 * share) : std::string()));
  }
  const double retention_h = tier.at("retention_h").get<double>();
  const double hold_h = tier.at("mean_hold_h").get<double>();
  t.add_row(
      {fmt::format("the SSD tier that keeps '{}' sessions {:g} h ({:.3f} sessions/s, {:.0f} tokens each "
                   "after its last turn{})",
                   plan.at("workload").get<std::string>(), retention_h,
                   tier.at("sessions_per_s").get<double>(), tier.at("last_context_tokens").get<double>(),
                   hold_h < retention_h
                       ? fmt::format(", held {:.1f} h on average: resumed sessions come back sooner", hold_h)
                       : std::string()),
       fmt::format("{}", fmt::join(models, "; ")), "What the KV tiers are worth"});
}

// Whole forward steps that serving engines published (probe step): the
// model's throughput against theirs, the caveat every served figure above
// carries until our measurements calibrate the kernel model.
void add_whole_steps(Table& t, const json& validation) {
  // Each model's steps apart too: the models stepped differ in kernels and engines.
  struct Steps {
    std::vector<double> errors;
    int within = 0;
    void add(const json& r) {
      errors.push_back(r.at("error_pct").get<double>());
      within += r.at("within_tolerance").get<bool>() ? 1 : 0;
    }
    std::string range() const {
      const auto [least, most] = std::minmax_element(errors.begin(), errors.end());
      return fmt::format("{:+.1f}% to {:+.1f}%", *least, *most);
    }
  };
  Steps all;
  std::map<std::string, Steps> models;  // model: its steps
  std::map<std::string, int> gpus;      // GPU: its steps
  for (const json& r : validation) {
    if (r.value("probe", "") != "step") continue;
    all.add(r);
    models[r.value("model", "")].add(r);
    ++gpus[r.at("gpu").get<std::string>()];
  }
  if (all.errors.empty()) return;
  std::vector<std::string> on;
  for (const auto& [gpu, steps] : gpus) on.push_back(steps > 1 ? fmt::format("{} ({})", gpu, steps) : gpu);
  std::vector<std::string> by_model;
  if (models.size() > 1) {
    for (const auto& [model, steps] : models) {
      by_model.push_back(fmt::format("{}: {}, {} of {}", model.empty() ? "unnamed" : model, steps.range(),
                                     steps.within, steps.errors.size()));
    }
  }
  t.add_row({fmt::format("whole forward steps that serving engines published ({} on {})", all.errors.size(),
                         fmt::join(on, ", ")),
             fmt::format("the model's throughput {} against theirs, {} of {} within tolerance{}; the step "
                         "times and served figures above rest on the same kernel model",
                         all.range(), all.within, all.errors.size(),
                         by_model.empty() ? "" : fmt::format(" ({})", fmt::join(by_model, "; "))),
             "Validation"});
}

// Whole serving benchmarks that engines published (probe serving): the
// model's throughput and latencies against theirs, on the model family served.
void add_serving_benchmarks(Table& t, const json& validation) {
  std::map<std::string, std::vector<double>> errors;  // metric: its errors
  std::set<std::string> gpus;
  int figures = 0;
  for (const json& r : validation) {
    if (r.value("probe", "") != "serving") continue;
    errors[r.at("metric").get<std::string>()].push_back(r.at("error_pct").get<double>());
    gpus.insert(r.at("gpu").get<std::string>());
    ++figures;
  }
  if (errors.empty()) return;
  // Each figure published, in words, and how far the model is from it.
  static const std::vector<std::pair<std::string, std::string>> kMetrics{
      {"tokens_per_s_per_gpu", "throughput"},
      {"tpot_ms", "mean TPOT"},
      {"ttft_ms", "mean TTFT"},
      {"ttft_p50_ms", "median TTFT"}};
  std::vector<std::string> ranges;
  for (const auto& [metric, words] : kMetrics) {
    const auto it = errors.find(metric);
    if (it == errors.end()) continue;
    const auto [least, most] = std::minmax_element(it->second.begin(), it->second.end());
    ranges.push_back(fmt::format("{} {:+.1f}% to {:+.1f}%", words, *least, *most));
  }
  t.add_row(
      {fmt::format("whole serving benchmarks that engines published ({} figures on {})", figures,
                   fmt::join(gpus, ", ")),
       fmt::format("the model's {} against theirs: the served figures above are what the kernel model's "
                   "engine would serve, not these engines",
                   fmt::join(ranges, ", ")),
       "Validation"});
}

void add_validation(Table& t, const json& validation) {
  int published = 0, within = 0, held_out = 0;
  for (const json& r : validation) {
    // Whole steps and whole benchmarks have rows of their own, below.
    const std::string probe = r.value("probe", "");
    if (probe == "step" || probe == "serving") continue;
    if (r.at("kind") == "published") {
      ++published;
      within += r.at("within_tolerance").get<bool>() ? 1 : 0;
    } else {
      ++held_out;
    }
  }
  t.add_row({"kernel model against published kernel figures",
             fmt::format("{} of {} within tolerance; {}", within, published,
                         held_out > 0 ? fmt::format("{} held-out measurements of ours", held_out)
                                      : std::string("no GPU of ours measured yet (uncalibrated)")),
             "Validation"});
  add_whole_steps(t, validation);
  add_serving_benchmarks(t, validation);
}

}  // namespace

// The assumed figures a decode step moves with most (three at most).
void add_step_sensitivity(Table& t, const json& sensitivity) {
  std::vector<std::string> parts;
  for (const json& f : sensitivity.at("figures")) {
    if (parts.size() == 3) break;
    parts.push_back(fmt::format("{} ({}) {:.1f}%", f.at("field").get<std::string>(),
                                f.at("file").get<std::string>(), f.at("change_pct").get<double>()));
  }
  if (parts.empty()) return;
  t.add_row(
      {fmt::format("assumed figures the {} moves with most (each moved {:.0f}% down and up)",
                   sensitivity.at("step").get<std::string>(), 100 * sensitivity.at("swing").get<double>()),
       fmt::format("{}", fmt::join(parts, "; ")), "Which assumptions the step times rest on"});
}

// What the kernels an engine may lack (two in the indexer, W4A8 experts, mHC's one pass) cost
// a decode step's output token at the longest context the report times.
void add_engine_choices(Table& t, const json& choices) {
  int64_t longest = 0;
  for (const json& r : choices.at("rows")) longest = std::max(longest, r.at("context").get<int64_t>());
  std::vector<std::string> parts;
  for (const json& r : choices.at("rows")) {
    const std::string phrase = r.at("phrase").get<std::string>();  // empty for the assumed kernels
    if (r.at("context").get<int64_t>() != longest || phrase.empty()) continue;
    parts.push_back(fmt::format("{:+.1f}% with {} ({} drafts)", r.at("change_pct").get<double>(), phrase,
                                r.at("drafts").get<int64_t>()));
  }
  if (parts.empty()) return;
  // And what the choices that move a prompt's prefill cost it.
  const std::size_t decode_parts = parts.size();
  if (choices.contains("prefill_rows")) {
    for (const json& r : choices.at("prefill_rows")) {
      const std::string phrase = r.at("phrase").get<std::string>();
      const double change = r.at("change_pct").get<double>();
      if (phrase.empty() || std::fabs(change) < 0.05) continue;
      parts.push_back(fmt::format("a {}-token prompt's prefill {:+.1f}% with {}",
                                  r.at("context").get<int64_t>(), change, phrase));
    }
  }
  t.add_row(
      {fmt::format("what an engine without the two indexer kernels, the W4A8 experts, the single-pass "
                   "mHC or the index keys the model assumes pays ({} decode, "
                   "batch {}, {} tokens; "
                   "time per output token{})",
                   choices.at("gpu").get<std::string>(), choices.at("batch").get<int64_t>(), longest,
                   parts.size() > decode_parts ? "; and one prompt's prefill, where a choice moves it" : ""),
       fmt::format("{}", fmt::join(parts, "; ")), "Which assumptions the step times rest on"});
}

Table study_summary(const json& report) {
  Table t(
      "What the sections below find (each figure is computed in the section named; its sources are there)",
      {"question", "answer", "section"});
  add_claims(t, report.at("claims"));
  add_sessions(t, report.at("fits"));
  add_decode_steps(t, report.at("steps"));
  add_overlap(t, report.at("steps"));
  if (report.contains("step_sensitivity")) {
    add_step_sensitivity(t, report.at("step_sensitivity"));
    if (report.at("step_sensitivity").contains("engine_choices"))
      add_engine_choices(t, report.at("step_sensitivity").at("engine_choices"));
  }
  if (report.contains("context_sweeps")) add_context(t, report.at("context_sweeps"));
  if (report.contains("decode_frontier")) add_frontier(t, report.at("decode_frontier"));
  if (report.contains("serving_mix")) add_mix(t, report.at("serving_mix"));
  add_plans(t, report);
  add_ep_choices(t, report.at("plan"));
  add_aggregated_steps(t, report.at("plan_layouts"));
  if (report.contains("plan_kv_tiers")) add_kv_tiers(t, report.at("plan_kv_tiers"));
  if (report.contains("capacity")) add_capacity(t, report.at("capacity"));
  add_validation(t, report.at("validation"));
  t.add_note(
      "step times and served latencies come from the kernel model; until our measurements calibrate it, its "
      "bands are the priors' error on published kernel figures");
  return t;
}

}  // namespace v41sim
