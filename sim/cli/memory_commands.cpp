// v41sim kv, params, fit, claims and report: the memory questions.
#include <fmt/format.h>

#include "sim/capacity/memory_fit.h"
#include "sim/cli/flags.h"
#include "sim/common/catalog.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/report/claims.h"
#include "sim/report/fit_view.h"
#include "sim/report/model_views.h"
#include "sim/report/study_report.h"

namespace v41sim::cli {
namespace {

int64_t context_or_max(const Flags& f, const ModelAnalysis& m) {
  if (!f.session_context) return m.spec.max_context;
  require_servable_context(m.spec, *f.session_context, "--context");
  return *f.session_context;
}

SourcedValue reserve_from(const Flags& f) {
  if (!f.reserve_fraction) return default_reserve_fraction();
  if (!(*f.reserve_fraction >= 0 && *f.reserve_fraction < 1)) {
    throw InputError({"", 0, "--reserve-fraction"},
                     fmt::format("expected a fraction in [0, 1), got {}", *f.reserve_fraction));
  }
  return SourcedValue::assumed(*f.reserve_fraction, "given with --reserve-fraction");
}

WeightFormats weights_from(const Flags& f, const ModelAnalysis& m) {
  WeightFormats w = m.spec.weights;
  if (f.weights_dtype == "released") return w;
  if (!m.spec.moe && (f.weights_dtype == "fp8" || f.weights_dtype == "mxfp4")) {
    throw InputError({"", 0, "--weights-dtype"},
                     m.spec.name + " has no routed experts, whose weights are all --weights-dtype changes");
  }
  if (f.weights_dtype == "fp8") {
    w.routed_experts = m.spec.weights.dense;  // the checkpoint's own block-scaled FP8
    return w;
  }
  if (f.weights_dtype == "mxfp4") {
    // OCP Microscaling MXFP4: e2m1 values with an e8m0 scale per 32.
    w.routed_experts = {ElementFormat::kFp4E2M1, ElementFormat::kE8M0, 32};
    return w;
  }
  throw InputError({"", 0, "--weights-dtype"},
                   "unknown value '" + f.weights_dtype + "' (expected one of: released, fp8, mxfp4)");
}

DensePlacement placement_from(const Flags& f) {
  if (f.dense_placement == "replicated") return DensePlacement::kReplicated;
  if (f.dense_placement == "sharded") return DensePlacement::kSharded;
  throw InputError({"", 0, "--dense-placement"},
                   "unknown value '" + f.dense_placement + "' (expected replicated or sharded)");
}

}  // namespace

void run_kv(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const ModelAnalysis m = load_model_named(catalog, f.model);
  const int64_t context = context_or_max(f, m);
  if (f.json) {
    out << kv_json(m, context).dump(2) << "\n";
  } else {
    print_tables(out, kv_tables(m, context));
  }
}

void run_params(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const ModelAnalysis m = load_model_named(catalog, f.model);
  if (f.json) {
    out << params_json(m).dump(2) << "\n";
  } else {
    print_tables(out, params_tables(m));
  }
}

void run_fit(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const ModelAnalysis m = load_model_named(catalog, f.model);
  const GpuProfile gpu = load_gpu_profile_file(catalog.resolve_gpu(f.hw));
  FitRequest request{f.gpus,
                     f.ep,
                     context_or_max(f, m),
                     weights_from(f, m),
                     placement_from(f),
                     reserve_from(f),
                     f.redundant_experts};
  request.attention_tp = f.attention_tp;
  const FitResult fit = fit_memory(m, gpu, request);
  // The same fit with each other index-key format the model file defines
  // (the FP8 key engines without an FP4 indexer store).
  nlohmann::json json = fit_json(m, gpu, request, fit);
  Table table = fit_table(m, gpu, request, fit);
  json["sessions_with_index_keys"] = nlohmann::json::object();
  for (const SessionsWithIndexKeys& keyed : sessions_with_other_index_keys(m, gpu, request)) {
    json["sessions_with_index_keys"][keyed.format] = keyed.sessions;
    table.add_note(fmt::format("with the index keys stored as {}: {} sessions (`kv` says who stores them)",
                               index_key_format_text(m.spec, keyed.format, false), keyed.sessions));
  }
  if (f.json) {
    out << json.dump(2) << "\n";
  } else {
    out << table.to_text();
  }
}

void run_claims(const Catalog& catalog, const Flags& f, std::ostream& out) {
  const ModelAnalysis v41 = load_model_named(catalog, "deepseek_v4_1_flash");
  const auto claims = check_bundled_claims(catalog, v41, reserve_from(f));
  if (f.json) {
    out << claims_json(claims).dump(2) << "\n";
    return;
  }
  for (const Claim& c : claims) {
    out << "- " << c.statement << "\n  verdict: " << verdict_text(c) << "\n";
    for (const std::string& finding : c.findings) out << "    * " << finding << "\n";
  }
}

void run_report(const Catalog& catalog, const Flags& f, std::ostream& out) {
  StudyOptions options;
  options.out_dir = f.out_dir;
  options.reserve_fraction = reserve_from(f);
  const StudyOutput written = write_study_report(catalog, options);
  out << "report written to " << written.markdown_path << " (and " << written.json_path << ", "
      << written.html_path << ")\n";
}

}  // namespace v41sim::cli
