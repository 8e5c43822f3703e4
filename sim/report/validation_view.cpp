#include "sim/report/validation_view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "sim/validation/error_stats.h"

namespace v41sim {
namespace {

// A miss says what the model lacks there (the reference's model_lacks), or
// that nothing explains it yet; a figure within tolerance says nothing.
std::string miss_reason(const ValidationRow& r) {
  if (r.within_tolerance) return "";
  return r.reference.model_lacks.empty() ? "not explained" : r.reference.model_lacks;
}

}  // namespace

Table validation_table(const std::vector<ValidationRow>& rows) {
  Table t("Kernel model vs published figures and our held-out measurements",
          {"reference", "GPU", "metric", "reference value", "predicted", "error", "within tolerance",
           "prior read off it", "where it misses: what the model lacks"});
  int within = 0, measured = 0, out_of_sample = 0, out_of_sample_within = 0, explained = 0;
  // Each kernel-model label (they differ by GPU: carried within or across the
  // architecture) with the GPUs it timed, in order of first use.
  std::vector<std::pair<std::string, std::vector<std::string>>> labels;
  for (const ValidationRow& r : rows) {
    within += r.within_tolerance ? 1 : 0;
    if (r.reference.sets_prior.empty()) {
      ++out_of_sample;
      out_of_sample_within += r.within_tolerance ? 1 : 0;
    }
    if (r.reference.probe_kind == "held_out_measurement") {
      ++measured;
    } else {
      auto it = std::find_if(labels.begin(), labels.end(),
                             [&](const auto& l) { return l.first == r.kernel_model; });
      if (it == labels.end()) it = labels.insert(labels.end(), {r.kernel_model, {}});
      if (std::find(it->second.begin(), it->second.end(), r.reference.gpu) == it->second.end())
        it->second.push_back(r.reference.gpu);
    }
    explained += !r.within_tolerance && !r.reference.model_lacks.empty() ? 1 : 0;
    t.add_row({r.reference.name, r.reference.gpu, r.reference.metric, format_fixed(r.reference.value, 1),
               format_fixed(r.predicted, 1), fmt::format("{:+.1f}%", r.error_pct),
               fmt::format("{} (±{:.0f}%)", r.within_tolerance ? "yes" : "no", r.reference.tolerance_pct),
               r.reference.sets_prior, miss_reason(r)});
  }
  const int misses = static_cast<int>(rows.size()) - within;
  t.add_note(
      fmt::format("{} of {} within tolerance; misses: {} with what the model lacks there, {} not explained",
                  within, rows.size(), explained, misses - explained));
  for (const auto& [label, gpus] : labels) {
    t.add_note(fmt::format("kernel model on {}: {}", fmt::join(gpus, ", "), label));
  }
  t.add_note(
      fmt::format("out of sample (no prior was read off them): {} of {} within tolerance; the rest "
                  "agree partly by construction until our own measurements replace the priors",
                  out_of_sample_within, out_of_sample));
  t.add_note("sources and probes: validation/published/*.yaml");
  t.add_note(measured > 0
                 ? fmt::format("{} held-out shapes of our own measurements (validation/measurements/), "
                               "each predicted with its GPU's fitted calibration",
                               measured)
                 : std::string("no held-out measurements yet: no GPU has been measured and calibrated"));
  return t;
}

namespace {

struct KindErrors {
  std::vector<double> all, out_of_sample;
  int within = 0;
};

// Probe kinds in first-seen order, each with its references' relative errors.
std::vector<std::pair<std::string, KindErrors>> errors_by_kind(const std::vector<ValidationRow>& rows) {
  std::vector<std::pair<std::string, KindErrors>> kinds;
  for (const ValidationRow& r : rows) {
    auto it = std::find_if(kinds.begin(), kinds.end(),
                           [&](const auto& k) { return k.first == r.reference.probe_kind; });
    if (it == kinds.end()) it = kinds.insert(kinds.end(), {r.reference.probe_kind, {}});
    it->second.all.push_back(r.error_pct / 100.0);
    if (r.reference.sets_prior.empty()) it->second.out_of_sample.push_back(r.error_pct / 100.0);
    it->second.within += r.within_tolerance ? 1 : 0;
  }
  return kinds;
}

}  // namespace

nlohmann::json stats_json(const ErrorStats& s) {
  return {{"count", s.count},
          {"mape_pct", s.mape_pct},
          {"worst_pct", s.worst_pct},
          {"bias_pct", s.bias_pct},
          {"band_90_pct", s.band_90_pct}};
}

Table validation_summary_table(const std::vector<ValidationRow>& rows) {
  Table t("Errors by what the references exercise", {"probe", "references", "within tolerance", "MAPE",
                                                     "worst", "bias", "90% band", "out of sample: n, MAPE"});
  for (const auto& [kind, e] : errors_by_kind(rows)) {
    const ErrorStats all = error_stats(e.all);
    const ErrorStats out = error_stats(e.out_of_sample);
    t.add_row({kind, std::to_string(all.count), std::to_string(e.within),
               fmt::format("{:.1f}%", all.mape_pct), fmt::format("{:.1f}%", all.worst_pct),
               fmt::format("{:+.1f}%", all.bias_pct), fmt::format("{:.1f}%", all.band_90_pct),
               out.count > 0 ? fmt::format("{}, {:.1f}%", out.count, out.mape_pct) : std::string("0")});
  }
  t.add_note(
      "probe: gemm and grouped_gemm time one GEMM, attention one attention kernel, indexer the indexer's "
      "logits, stream a streaming kernel, mhc one of mHC's kernels, topk a top-k selection, "
      "all_to_all one EP transfer, moe_layer an MoE layer's kernels together, step a serving engine's whole "
      "forward step (tokens per second per node or per GPU, as published), serving a whole serving benchmark "
      "(its mean or median TTFT, mean TPOT or tokens per second per GPU, as published); "
      "held_out_measurement: our own rows");
  t.add_note(
      "bias: mean signed error (positive: the model predicts more than the reference, in its metric: a "
      "kind whose figures are both times and rates, as all_to_all's and serving's, mixes signs that mean "
      "opposite things, so its bias says little); 90% band: the 90th percentile of the absolute errors");
  return t;
}

namespace {

// Everything a reference's probe set, so that a reader can rerun it: its
// counts, and the files and formats it names (a serving probe's deployment,
// workload, routed experts' and index keys' formats).
nlohmann::json probe_fields_json(const PublishedReference& r) {
  nlohmann::json fields = nlohmann::json::object();
  for (const auto& [key, value] : r.probe) fields[key] = value;
  const std::pair<const char*, const std::string*> named[] = {
      {"model", &r.probe_model},       {"deployment", &r.probe_deployment},
      {"workload", &r.probe_workload}, {"phase", &r.probe_phase},
      {"kernel", &r.probe_kernel},     {"math", &r.probe_math},
      {"weights", &r.probe_weights},   {"index_key_cache", &r.probe_index_key_cache}};
  for (const auto& [key, value] : named)
    if (!value->empty()) fields[key] = *value;
  return fields;
}

}  // namespace

nlohmann::json validation_json(const std::vector<ValidationRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const ValidationRow& r : rows) {
    out.push_back(
        {{"name", r.reference.name},
         {"kind", r.reference.probe_kind == "held_out_measurement" ? "held_out_measurement" : "published"},
         {"probe", r.reference.probe_kind},
         {"probe_fields", probe_fields_json(r.reference)},
         {"source", r.reference.source},
         {"gpu", r.reference.gpu},
         {"model", r.reference.probe_model},
         {"metric", r.reference.metric},
         {"reference", r.reference.value},
         {"predicted", r.predicted},
         {"error_pct", r.error_pct},
         {"tolerance_pct", r.reference.tolerance_pct},
         {"within_tolerance", r.within_tolerance},
         {"sets_prior", r.reference.sets_prior},
         {"model_lacks", r.reference.model_lacks},
         {"kernel_model", r.kernel_model}});
  }
  nlohmann::json by_probe = nlohmann::json::array();
  for (const auto& [kind, e] : errors_by_kind(rows)) {
    by_probe.push_back({{"probe", kind},
                        {"within_tolerance", e.within},
                        {"all", stats_json(error_stats(e.all))},
                        {"out_of_sample", stats_json(error_stats(e.out_of_sample))}});
  }
  return {{"references", out}, {"by_probe", by_probe}};
}

}  // namespace v41sim
