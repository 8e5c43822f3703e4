#include "sim/validation/step_log_comparison.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "sim/common/input_error.h"
#include "sim/cost/draft_choice.h"
#include "sim/cost/step_cost.h"
#include "sim/graph/step_graph.h"

namespace v41sim {
namespace {

// The row's checks that need the model, at the row's line.
void check_against_model(const StepLog& log, const LoggedStep& s, const ModelSpec& m) {
  for (const auto& [column, tokens] :
       {std::pair{"context", s.context}, std::pair{"chunk_context", s.chunk_context}}) {
    if (tokens > m.max_context) {
      throw InputError({log.file, s.line, column},
                       fmt::format("{} tokens exceed {}'s max_context of {}", tokens, m.name, m.max_context));
    }
  }
  const int64_t most = m.draft ? m.draft->block_size : 0;
  if (s.drafts > most) {
    throw InputError(
        {log.file, s.line, "drafts"},
        most > 0 ? fmt::format("expected 0 to {} drafts (the draft's block size), got {}", most, s.drafts)
                 : fmt::format("expected 0 drafts ({} has no draft), got {}", m.name, s.drafts));
  }
}

// The log's row on the deployment `base` describes.
StepShape shape_of(const LoggedStep& s, const StepShape& base) {
  StepShape shape = base;
  shape.phase = s.kind == LoggedKind::kPrefill ? Phase::kPrefill : Phase::kDecode;
  shape.batch = s.batch;
  shape.context = s.context;
  if (s.kind == LoggedKind::kPrefill) {
    shape.new_tokens = s.new_tokens;
    shape.continuing = s.continuing;
    return shape;
  }
  shape = verifying(shape, s.drafts);
  if (s.kind == LoggedKind::kMixed) {
    shape.mixed_prefill = {s.chunk_prompts, s.chunk_tokens, s.chunk_context, s.continuing};
  }
  return shape;
}

// Pearson's r of two series of one length; 0 where either has no spread.
double pearson_r(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  if (x.size() < 2) return 0;
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= n;
  my /= n;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

PhaseComparison compare_phase(const std::vector<TimedStep>& steps, LoggedKind kind) {
  PhaseComparison c;
  c.kind = kind;
  std::vector<double> predicted, measured, errors;
  ErrorBandMix bands;
  int within = 0;
  for (const TimedStep& t : steps) {
    if (t.logged.kind != kind) continue;
    ++c.steps;
    c.predicted_us += t.predicted_us;
    bands.add(t.band, t.predicted_us);
    if (!t.error) continue;
    c.measured_us += *t.logged.measured_us;
    predicted.push_back(t.predicted_us);
    measured.push_back(*t.logged.measured_us);
    errors.push_back(*t.error);
    if (std::fabs(*t.logged.measured_us - t.predicted_us) <= t.band.pct / 100.0 * t.predicted_us) ++within;
  }
  c.errors = error_stats(errors);
  c.pearson_r = pearson_r(predicted, measured);
  c.band = bands.mixed();
  if (!errors.empty()) c.within_band_share = static_cast<double>(within) / static_cast<double>(errors.size());
  return c;
}

}  // namespace

StepLogComparison compare_step_log(const StepLog& log, const ModelAnalysis& model, const StepShape& base,
                                   const KernelCostModel& launched_cost, const KernelCostModel& decode_cost) {
  StepLogComparison out;
  // A log repeats its shapes (a decode batch over many steps): each is timed once.
  using Key = std::tuple<LoggedKind, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;
  std::map<Key, std::pair<double, ErrorBand>> known;
  for (const LoggedStep& s : log.steps) {
    check_against_model(log, s, model.spec);
    const StepShape shape = shape_of(s, base);
    const Key key{s.kind,       s.batch,         s.context,      s.new_tokens,   s.drafts,
                  s.continuing, s.chunk_prompts, s.chunk_tokens, s.chunk_context};
    auto it = known.find(key);
    if (it == known.end()) {
      const KernelCostModel& cost = s.kind == LoggedKind::kDecode ? decode_cost : launched_cost;
      const StepTiming timing = time_step(build_step_graph(model, shape), cost);
      it = known.emplace(key, std::pair{timing.total_us, step_error_band(timing, cost.params())}).first;
    }
    const auto& [predicted_us, band] = it->second;
    std::optional<double> error;
    if (s.measured_us) error = predicted_us / *s.measured_us - 1.0;
    out.steps.push_back({s, shape, predicted_us, band, error});
  }
  for (const LoggedKind kind : {LoggedKind::kPrefill, LoggedKind::kDecode, LoggedKind::kMixed}) {
    PhaseComparison c = compare_phase(out.steps, kind);
    if (c.steps > 0) out.phases.push_back(c);
  }
  return out;
}

}  // namespace v41sim
