#include "sim/report/step_log_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/cost/error_band.h"
#include "sim/graph/step_graph.h"
#include "sim/report/step_view.h"
#include "sim/report/validation_view.h"

namespace v41sim {
namespace {

// Rows the text lists; JSON holds every step.
constexpr std::size_t kListedSteps = 10;

std::string pct(double value) { return fmt::format("{:+.1f}%", value); }

// A mixed row's prompt chunks: "2 x 4096 of 16384 (1 continuing)"; empty elsewhere.
std::string chunks_phrase(const LoggedStep& l) {
  if (l.kind != LoggedKind::kMixed) return "";
  return fmt::format("{} x {} of {}{}", l.chunk_prompts, l.chunk_tokens, l.chunk_context,
                     l.continuing > 0 ? fmt::format(" ({} continuing)", l.continuing) : "");
}

Table phase_table(const StepLogReport& r) {
  Table t(fmt::format("Steps of {} timed on {}", r.log.file, r.gpu.name),
          {"phase", "steps", "predicted (s)", "band (90%)", "logged (s)", "predicted / logged", "MAPE",
           "bias", "worst", "90% of |error|", "Pearson r", "logged within the band"});
  for (const PhaseComparison& c : r.comparison.phases) {
    const std::string predicted = format_fixed(c.predicted_us / 1e6, 3);
    const std::string band = c.band.describe();
    if (!r.log.measured) {
      t.add_row({logged_kind_name(c.kind), std::to_string(c.steps), predicted, band, "not in the log", "", "",
                 "", "", "", "", ""});
      continue;
    }
    const ErrorStats& e = c.errors;
    t.add_row({logged_kind_name(c.kind), std::to_string(c.steps), predicted, band,
               format_fixed(c.measured_us / 1e6, 3), format_fixed(c.predicted_us / c.measured_us, 3),
               fmt::format("{:.1f}%", e.mape_pct), pct(e.bias_pct), fmt::format("{:.1f}%", e.worst_pct),
               fmt::format("{:.1f}%", e.band_90_pct),
               c.steps >= 2 ? format_fixed(c.pearson_r, 3) : "one step",
               fmt::format("{:.0f}% of steps", 100 * c.within_band_share)});
  }
  t.add_note("kernel model: " + r.cost_label + "; GPU figures from " + r.gpu.file);
  t.add_note("each row runs on " + r.settings);
  t.add_note(
      "a decode row's sequences all at its context (the model times a batch at one context; give the "
      "batch's mean), verifying its drafts; a prefill row's prompts each computing new_tokens of its context "
      "(the rest cached), their chunks ending their prompts but for `continuing`; a mixed row, a decode "
      "step carrying prompt chunks, launched as a serving run times it");
  for (const PhaseComparison& c : r.comparison.phases) {
    if (c.kind == LoggedKind::kMixed) t.add_note(kMixedStepAssumption);
  }
  if (r.log.measured) {
    t.add_note(
        "error: (predicted - logged) / logged per step; MAPE its mean |error|, bias its mean, predicted / "
        "logged the phase's summed times; a negative bias: the model is faster than the engine; within the "
        "band: |logged - predicted| at most the step's band times its prediction (honest 90% bands hold "
        "about "
        "9 steps in 10; a band covers only its share of the time, the rest unbanded)");
    t.add_note(kErrorBandMethod);
  }
  return t;
}

Table steps_table(const StepLogReport& r) {
  std::vector<const TimedStep*> listed;
  for (const TimedStep& t : r.comparison.steps) listed.push_back(&t);
  if (r.log.measured) {
    std::stable_sort(listed.begin(), listed.end(), [](const TimedStep* a, const TimedStep* b) {
      return std::fabs(*a->error) > std::fabs(*b->error);
    });
  }
  const std::size_t shown = std::min(listed.size(), kListedSteps);
  Table t(r.log.measured ? fmt::format("The {} steps the model is furthest from", shown)
                         : fmt::format("The first {} steps as timed", shown),
          {"line", "phase", "batch", "context", "new tokens", "drafts", "prompt chunks", "predicted (us)",
           "logged (us)", "error"});
  for (std::size_t i = 0; i < shown; ++i) {
    const TimedStep& s = *listed[i];
    const LoggedStep& l = s.logged;
    t.add_row({std::to_string(l.line), logged_kind_name(l.kind), std::to_string(l.batch),
               std::to_string(l.context), std::to_string(l.new_tokens), std::to_string(l.drafts),
               chunks_phrase(l), format_fixed(s.predicted_us, 1),
               l.measured_us ? format_fixed(*l.measured_us, 1) : "", s.error ? pct(100 * *s.error) : ""});
  }
  if (listed.size() > shown) t.add_note(fmt::format("of {} steps; --json lists every one", listed.size()));
  return t;
}

}  // namespace

std::vector<Table> step_log_tables(const StepLogReport& r) { return {phase_table(r), steps_table(r)}; }

nlohmann::json step_log_json(const StepLogReport& r) {
  nlohmann::json j = {{"file", r.log.file},
                      {"gpu", r.gpu.name},
                      {"kernel_model", r.cost_label},
                      {"settings", r.settings},
                      {"measured", r.log.measured},
                      {"phases", nlohmann::json::array()},
                      {"steps", nlohmann::json::array()}};
  for (const PhaseComparison& c : r.comparison.phases) {
    nlohmann::json p = {{"phase", logged_kind_name(c.kind)},
                        {"steps", c.steps},
                        {"predicted_us", c.predicted_us},
                        {"band_90_pct", c.band.pct},
                        {"band_covered_share", c.band.covered_share}};
    if (r.log.measured) {
      p["measured_us"] = c.measured_us;
      p["errors"] = stats_json(c.errors);
      p["pearson_r"] = c.pearson_r;
      p["within_band_share"] = c.within_band_share;
    }
    j["phases"].push_back(p);
  }
  for (const TimedStep& s : r.comparison.steps) {
    const LoggedStep& l = s.logged;
    nlohmann::json step = {{"line", l.line},
                           {"phase", logged_kind_name(l.kind)},
                           {"batch", l.batch},
                           {"context", l.context},
                           {"new_tokens", l.new_tokens},
                           {"drafts", l.drafts},
                           {"continuing", l.continuing},
                           {"predicted_us", s.predicted_us},
                           {"band_90_pct", s.band.pct}};
    if (l.kind == LoggedKind::kMixed) {
      step["chunk_prompts"] = l.chunk_prompts;
      step["chunk_tokens"] = l.chunk_tokens;
      step["chunk_context"] = l.chunk_context;
    }
    if (l.measured_us) {
      step["measured_us"] = *l.measured_us;
      step["error_pct"] = 100 * *s.error;
    }
    j["steps"].push_back(step);
  }
  return j;
}

}  // namespace v41sim
