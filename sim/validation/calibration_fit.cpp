#include "sim/validation/calibration_fit.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string_view>
#include <tuple>
#include <unsupported/Eigen/NonLinearOptimization>
#include <unsupported/Eigen/NumericalDiff>
#include <utility>

#include "sim/cost/kernel_cost.h"
#include "sim/validation/error_stats.h"

namespace v41sim {
namespace {

constexpr int kHoldOutEvery = 4;  // every fourth shape is held out
// A tile shape replaces the prior's only if it lowers the training rows' RMS
// relative error by this much (0.2 percentage points): smaller gains are noise.
constexpr double kTileGainRms = 0.002;
// Fewer training shapes than this and the tile shape stays the prior's: a
// handful of rows cannot tell wave quantization from noise.
constexpr std::size_t kMinRowsForTile = 8;

double logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double logit(double p) { return std::log(p / (1.0 - p)); }

// The continuous parameters of one class: both efficiencies, the fixed
// overhead, and, where the rows can show them, the share of the epilogue
// write hidden under the main loop (GEMMs) and of the widening hidden under
// the tensor math. The optimizer moves them unconstrained: logits of the
// fractions, the log of the overhead.
struct Continuous {
  double compute_efficiency = 0;
  double memory_efficiency = 0;
  double fixed_overhead_us = 0;
  std::optional<double> epilogue_overlap;
  std::optional<double> widening_overlap;
};

// Which optional parameters a fit moves: x holds the three always fitted,
// then the epilogue's share, then the widening's, each where fitted.
struct FitLayout {
  bool epilogue = false;
  bool widening = false;
  Eigen::Index size() const { return 3 + epilogue + widening; }
  Eigen::Index widening_at() const { return 3 + epilogue; }
};

Continuous from_vector(const Eigen::VectorXd& x, const FitLayout& layout) {
  Continuous v{logistic(x[0]), logistic(x[1]), std::exp(x[2]), std::nullopt, std::nullopt};
  if (layout.epilogue) v.epilogue_overlap = logistic(x[3]);
  if (layout.widening) v.widening_overlap = logistic(x[layout.widening_at()]);
  return v;
}

// The epilogue overlap can be told apart from the efficiencies only where the
// rows' share of bytes outside the main loop varies (small-K GEMMs beside
// large ones); a class whose rows all carry the same share (our sparse decode:
// fixed top-k) keeps the prior's overlap.
bool epilogue_identifiable(const std::vector<const Measurement*>& rows) {
  double low = 1, high = 0;
  for (const Measurement* m : rows) {
    const double share = m->kernel.hbm_bytes > 0 ? m->kernel.epilogue_bytes / m->kernel.hbm_bytes : 0;
    low = std::min(low, share);
    high = std::max(high, share);
  }
  return high >= 0.05 && high >= 2 * low;
}

// The widening's share can be told apart from the efficiencies only where
// the rows widen on this GPU in differing shares of their time (FP4 weights
// at decode's shapes beside prefill's, or beside rows that widen nothing).
bool widening_identifiable(const std::vector<const Measurement*>& rows, const GpuProfile& gpu,
                           const CostParams& priors) {
  const KernelCostModel model(gpu, priors, /*cuda_graph=*/false);
  double low = 1, high = 0;
  for (const Measurement* m : rows) {
    const KernelTiming t = model.time(m->kernel);
    const double share = t.busy_us > 0 ? t.widening_us / t.busy_us : 0;
    low = std::min(low, share);
    high = std::max(high, share);
  }
  return high >= 0.05 && high >= 2 * low;
}

FitLayout fit_layout(const ClassCost& prior, const std::vector<const Measurement*>& rows,
                     const GpuProfile& gpu, const CostParams& priors) {
  return {prior.epilogue_overlap.has_value() && epilogue_identifiable(rows),
          widening_identifiable(rows, gpu, priors)};
}

// The priors' values, as the fit's start (the overhead from 1 us). A prior
// widening share of 1 or 0 starts inside the range, which the logistic never reaches.
Eigen::VectorXd start_vector(const ClassCost& prior, const FitLayout& layout) {
  Eigen::VectorXd x(layout.size());
  x[0] = logit(std::clamp(prior.compute_efficiency.value(), 0.05, 0.95));
  x[1] = logit(std::clamp(prior.memory_efficiency.value(), 0.05, 0.95));
  x[2] = std::log(1.0);
  if (layout.epilogue) x[3] = logit(std::clamp(prior.epilogue_overlap->value(), 0.05, 0.95));
  if (layout.widening) {
    const double share = prior.widening_overlap ? prior.widening_overlap->value() : 1.0;
    x[layout.widening_at()] = logit(std::clamp(share, 0.05, 0.95));
  }
  return x;
}

// The priors with one class's continuous parameters replaced.
CostParams with_class(const CostParams& base, KernelClass cls, const Continuous& v) {
  CostParams p = base;
  ClassCost& c = p.classes[static_cast<std::size_t>(cls)];
  c.compute_efficiency = SourcedValue::assumed(v.compute_efficiency, "fit in progress");
  c.memory_efficiency = SourcedValue::assumed(v.memory_efficiency, "fit in progress");
  c.fixed_overhead_us = SourcedValue::assumed(v.fixed_overhead_us, "fit in progress");
  if (v.epilogue_overlap) c.epilogue_overlap = SourcedValue::assumed(*v.epilogue_overlap, "fit in progress");
  if (v.widening_overlap) c.widening_overlap = SourcedValue::assumed(*v.widening_overlap, "fit in progress");
  return p;
}

// Relative errors of the predicted device time (no launch overhead: the
// harness times kernels on the device with CUDA events).
std::vector<double> relative_errors(const std::vector<const Measurement*>& rows, const GpuProfile& gpu,
                                    const CostParams& params) {
  const KernelCostModel model(gpu, params, /*cuda_graph=*/false);
  std::vector<double> errors;
  for (const Measurement* m : rows) {
    const double predicted = predicted_device_us(model, *m);
    errors.push_back((predicted - m->median_us) / m->median_us);
  }
  return errors;
}

struct FitFunctor {
  using Scalar = double;
  using InputType = Eigen::VectorXd;
  using ValueType = Eigen::VectorXd;
  using JacobianType = Eigen::MatrixXd;
  enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };

  const std::vector<const Measurement*>* rows;
  const GpuProfile* gpu;
  const CostParams* base;
  KernelClass cls;
  FitLayout layout;
  int params;

  int inputs() const { return params; }
  int values() const { return std::max<int>(params, static_cast<int>(rows->size())); }

  int operator()(const Eigen::VectorXd& x, Eigen::VectorXd& residuals) const {
    const CostParams p = with_class(*base, cls, from_vector(x, layout));
    const std::vector<double> errors = relative_errors(*rows, *gpu, p);
    residuals.setZero(values());
    for (std::size_t i = 0; i < errors.size(); ++i) residuals[static_cast<Eigen::Index>(i)] = errors[i];
    return 0;
  }
};

// Levenberg-Marquardt over the continuous parameters, for one tile shape.
struct ContinuousFit {
  Continuous values;
  double squared_error = 0;  // sum over the training rows
};

ContinuousFit fit_continuous(const std::vector<const Measurement*>& train, const GpuProfile& gpu,
                             const CostParams& base, KernelClass cls, const FitLayout& layout) {
  Eigen::VectorXd x = start_vector(base.of(cls), layout);
  FitFunctor functor{&train, &gpu, &base, cls, layout, static_cast<int>(x.size())};
  Eigen::NumericalDiff<FitFunctor> numeric(functor);
  Eigen::LevenbergMarquardt<Eigen::NumericalDiff<FitFunctor>> lm(numeric);
  lm.parameters.maxfev = 2000;
  lm.minimize(x);
  const Continuous values = from_vector(x, layout);
  double squared = 0;
  for (double e : relative_errors(train, gpu, with_class(base, cls, values))) squared += e * e;
  return {values, squared};
}

// The tile shape is discrete: the prior's, and half or twice it in each
// dimension. Each gets its own continuous fit; a candidate replaces the
// prior's shape only if it lowers the training rows' RMS relative error by
// kTileGainRms, so run-to-run noise does not pick a shape.
CostParams with_tile(const CostParams& base, KernelClass cls, int64_t tile_m, int64_t tile_n) {
  CostParams p = base;
  p.classes[static_cast<std::size_t>(cls)].tile_m = tile_m;
  p.classes[static_cast<std::size_t>(cls)].tile_n = tile_n;
  return p;
}

ClassFit fit_class(KernelClass cls, std::vector<const Measurement*> rows, const GpuProfile& gpu,
                   const CostParams& priors) {
  const auto [train, held_out] = split_rows(std::move(rows));
  const ClassCost& prior = priors.of(cls);
  int64_t tile_m = prior.tile_m, tile_n = prior.tile_n;
  // Which shares the rows can show, read once with the priors' tiles for every tile tried.
  const FitLayout layout = fit_layout(prior, train, gpu, priors);
  ContinuousFit best = fit_continuous(train, gpu, priors, cls, layout);
  for (const int64_t m : {prior.tile_m / 2, prior.tile_m, prior.tile_m * 2}) {
    for (const int64_t n : {prior.tile_n / 2, prior.tile_n, prior.tile_n * 2}) {
      if (train.size() < kMinRowsForTile) break;
      if (m < 1 || n < 1 || (m == prior.tile_m && n == prior.tile_n)) continue;
      if (prior.narrowing && (m < prior.narrowing->tile_m_min || n < prior.narrowing->tile_n_min)) continue;
      const ContinuousFit candidate = fit_continuous(train, gpu, with_tile(priors, cls, m, n), cls, layout);
      const double n_train = static_cast<double>(std::max<std::size_t>(train.size(), 1));
      if (std::sqrt(candidate.squared_error / n_train) <
          std::sqrt(best.squared_error / n_train) - kTileGainRms) {
        best = candidate;
        tile_m = m;
        tile_n = n;
      }
    }
  }
  const CostParams base = with_tile(priors, cls, tile_m, tile_n);

  ClassFit fit;
  fit.kernel_class = cls;
  fit.train_rows = static_cast<int>(train.size());
  fit.held_out_rows = static_cast<int>(held_out.size());
  fit.tile_m = tile_m;
  fit.tile_n = tile_n;
  const Continuous& v = best.values;
  fit.compute_efficiency = v.compute_efficiency;
  fit.memory_efficiency = v.memory_efficiency;
  fit.fixed_overhead_us = v.fixed_overhead_us;
  fit.epilogue_overlap = v.epilogue_overlap;
  fit.widening_overlap = v.widening_overlap;
  const CostParams fitted = with_class(base, cls, v);
  const ErrorStats train_stats = error_stats(relative_errors(train, gpu, fitted));
  const ErrorStats held_out_stats = error_stats(relative_errors(held_out, gpu, fitted));
  fit.train_mape_pct = train_stats.mape_pct;
  fit.held_out_mape_pct = held_out_stats.mape_pct;
  fit.held_out_worst_pct = held_out_stats.worst_pct;
  fit.held_out_bias_pct = held_out_stats.bias_pct;
  fit.band_90_pct = held_out.empty() ? train_stats.band_90_pct : held_out_stats.band_90_pct;
  return fit;
}

}  // namespace

RowSplit split_rows(std::vector<const Measurement*> rows) {
  // A fixed order (every field that tells shapes apart: rows of one shape may
  // differ in the work they count, as decode's indexer logits with a
  // request's drafts sharing its keys), so the split and the fit do not depend
  // on file order.
  std::sort(rows.begin(), rows.end(), [](const Measurement* a, const Measurement* b) {
    return std::tie(a->kernel.name, a->kernel.shape.m, a->kernel.shape.n, a->kernel.shape.k,
                    a->kernel.shape.batch, a->context, a->kernel.hbm_bytes, a->kernel.flops, a->median_us) <
           std::tie(b->kernel.name, b->kernel.shape.m, b->kernel.shape.n, b->kernel.shape.k,
                    b->kernel.shape.batch, b->context, b->kernel.hbm_bytes, b->kernel.flops, b->median_us);
  });
  RowSplit split;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    (rows.size() >= kHoldOutEvery && i % kHoldOutEvery == kHoldOutEvery - 1 ? split.held_out : split.train)
        .push_back(rows[i]);
  }
  return split;
}

double predicted_device_us(const KernelCostModel& model, const Measurement& m) {
  return model.time(m.kernel).busy_us;
}

bool is_baseline_row(const Measurement& m) {
  constexpr std::string_view kSuffix = "_baseline";
  return m.kernel.name.size() >= kSuffix.size() &&
         m.kernel.name.compare(m.kernel.name.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}

CalibrationResult calibrate(const MeasurementSet& measurements, const GpuProfile& gpu,
                            const CostParams& priors) {
  CalibrationResult result;
  for (const Measurement& m : measurements.rows) result.baseline_rows += is_baseline_row(m);
  result.gpu = measurements.metadata.count("gpu") ? measurements.metadata.at("gpu") : gpu.name;
  result.params = priors;
  for (int i = 0; i < kKernelClassCount; ++i) {
    const auto cls = static_cast<KernelClass>(i);
    if (timed_on_links(cls)) continue;  // not fitted: validate compares them with the link model
    std::vector<const Measurement*> rows;
    for (const Measurement& m : measurements.rows) {
      if (m.kernel.kernel_class == cls && !is_baseline_row(m)) rows.push_back(&m);
    }
    if (rows.empty()) continue;
    const ClassFit fit = fit_class(cls, rows, gpu, priors);
    const std::string how = fmt::format("fit to {} shapes; held-out MAPE {:.1f}% over {} shapes",
                                        fit.train_rows, fit.held_out_mape_pct, fit.held_out_rows);
    ClassCost& c = result.params.classes[static_cast<std::size_t>(i)];
    c.tile_m = fit.tile_m;
    c.tile_n = fit.tile_n;
    c.compute_efficiency = SourcedValue(fit.compute_efficiency, {ProvenanceKind::kCalibrated, how});
    c.memory_efficiency = SourcedValue(fit.memory_efficiency, {ProvenanceKind::kCalibrated, how});
    c.fixed_overhead_us = SourcedValue(fit.fixed_overhead_us, {ProvenanceKind::kCalibrated, how});
    if (fit.epilogue_overlap)
      c.epilogue_overlap = SourcedValue(*fit.epilogue_overlap, {ProvenanceKind::kCalibrated, how});
    if (fit.widening_overlap)
      c.widening_overlap = SourcedValue(*fit.widening_overlap, {ProvenanceKind::kCalibrated, how});
    c.error_band_pct = SourcedValue(
        fit.band_90_pct,
        {ProvenanceKind::kCalibrated,
         fit.held_out_rows > 0
             ? fmt::format("90th percentile of |error| over {} held-out shapes", fit.held_out_rows)
             : fmt::format("90th percentile of |error| over the {} training shapes (too few to hold any out)",
                           fit.train_rows)});
    result.classes.push_back(fit);
  }
  result.params.status = "calibrated";
  return result;
}

std::string calibration_yaml(const CalibrationResult& r, const MeasurementSet& m, const CostParams& priors) {
  auto sourced = [](const SourcedValue& v) {
    return fmt::format("{{value: {:.6g}, {}: \"{}\"}}", v.value(), v.provenance().kind_name(),
                       v.provenance().note);
  };
  std::string out = "# Written by v41sim calibrate; do not edit by hand.\n";
  out += "# measurements:\n";
  for (std::size_t i = 0; i < m.files.size(); ++i) {
    out += fmt::format("#   {} (fnv1a {})\n", std::filesystem::path(m.files[i]).filename().string(),
                       m.file_hashes[i]);
  }
  for (const auto& [key, value] : m.metadata) out += fmt::format("# {}: {}\n", key, value);
  out += "# held-out error per class (MAPE / worst / bias / 90% band), and the fitted tile shape:\n";
  for (const ClassFit& f : r.classes) {
    out += fmt::format("#   {}: {:.2f}% / {:.2f}% / {:+.2f}% / {:.2f}% over {} shapes; tile {}x{}\n",
                       class_key(f.kernel_class), f.held_out_mape_pct, f.held_out_worst_pct,
                       f.held_out_bias_pct, f.band_90_pct, f.held_out_rows, f.tile_m, f.tile_n);
  }
  out += "status: calibrated\n";
  double worst_mape = 0;
  for (const ClassFit& f : r.classes) worst_mape = std::max(worst_mape, f.held_out_mape_pct);
  out += fmt::format("held_out_mape_pct: {:.3f}\n", worst_mape);
  out += fmt::format(
      "source: \"fit to {} measurements on {} ({} baseline rows not fitted); uncalibrated classes keep the "
      "priors of {}\"\n",
      m.rows.size() - static_cast<std::size_t>(r.baseline_rows), r.gpu, r.baseline_rows,
      std::filesystem::path(priors.file).filename().string());
  out += "launch_overhead_us: " + sourced(r.params.launch_overhead_us) + "\n";
  out += "graph_replay_overhead_us: " + sourced(r.params.graph_replay_overhead_us) + "\n";
  out += "sm_bandwidth_multiple: " + sourced(r.params.sm_bandwidth_multiple) + "\n";
  out += "l2_bandwidth_multiple: " + sourced(r.params.l2_bandwidth_multiple) + "\n";
  out += "l2_resident_fraction: " + sourced(r.params.l2_resident_fraction) + "\n";
  out += "memory_latency_us: " + sourced(r.params.memory_latency_us) + "\n";
  out += fmt::format("split_to_fill_sms: {}\n", r.params.split_to_fill_sms ? "true" : "false");
  const WideningCost& w = r.params.widening;
  out += "widening:\n";
  out += "  fp32_lanes_per_sm: " + sourced(w.fp32_lanes_per_sm) + "\n";
  for (const auto& [key, value] : {std::pair{"integer_ops_per_clock", &w.integer_ops_per_clock},
                                   std::pair{"bf16x2_ops_per_clock", &w.bf16x2_ops_per_clock},
                                   std::pair{"fp8_to_bf16_cycles", &w.fp8_to_bf16_cycles},
                                   std::pair{"fp4_to_fp8_integer_ops", &w.fp4_to_fp8_integer_ops},
                                   std::pair{"fp4_to_bf16_integer_ops", &w.fp4_to_bf16_integer_ops},
                                   std::pair{"fp4_to_bf16_multiplies", &w.fp4_to_bf16_multiplies},
                                   std::pair{"compare_ops_per_clock", &w.compare_ops_per_clock}}) {
    out += fmt::format("  {}: {}\n", key, sourced(*value));
  }
  const LinkCost& l = r.params.links;
  out += "links:\n";
  out += "  nvlink_efficiency: " + sourced(l.nvlink_efficiency) + "\n";
  out += "  nic_efficiency: " + sourced(l.nic_efficiency) + "\n";
  out += "  host_link_efficiency: " + sourced(l.host_link_efficiency) + "\n";
  out += "  all_to_all_latency_intra_us: " + sourced(l.all_to_all_latency_intra_us) + "\n";
  out += "  all_to_all_latency_inter_us: " + sourced(l.all_to_all_latency_inter_us) + "\n";
  out += "  all_to_all_latency_low_latency_us: " + sourced(l.all_to_all_latency_low_latency_us) + "\n";
  out += "  host_copy_latency_us: " + sourced(l.host_copy_latency_us) + "\n";
  out += "  normal_transfer_sms: " + sourced(l.normal_transfer_sms) + "\n";
  out += "transfer:\n";
  out += "  same_architecture_extra_pct: " + sourced(r.params.transfer.same_architecture_extra_pct) + "\n";
  out += "  cross_architecture_extra_pct: " + sourced(r.params.transfer.cross_architecture_extra_pct) + "\n";
  out += "classes:\n";
  for (int i = 0; i < kKernelClassCount; ++i) {
    const auto kernel_class = static_cast<KernelClass>(i);
    const ClassCost& c = r.params.classes[static_cast<std::size_t>(i)];
    if (timed_on_links(kernel_class)) {  // no tiles or efficiencies: at most a band
      if (c.error_band_pct) {
        out += fmt::format("  {}:\n    error_band_pct: {}\n", class_key(kernel_class),
                           sourced(*c.error_band_pct));
      }
      continue;
    }
    out += fmt::format("  {}:\n    tile_m: {}\n    tile_n: {}\n    split_min: {}\n", class_key(kernel_class),
                       c.tile_m, c.tile_n, c.split_min);
    if (c.narrowing) {
      out += fmt::format("    narrowing: {{tile_m_min: {}, tile_n_min: {}, tile_n_step: {}}}\n",
                         c.narrowing->tile_m_min, c.narrowing->tile_n_min, c.narrowing->tile_n_step);
    }
    if (c.weight_only_tile)
      out += fmt::format("    weight_only_tile: {{m: {}, n: {}}}\n", c.weight_only_tile->m,
                         c.weight_only_tile->n);
    if (c.pipeline) {
      out += fmt::format(
          "    pipeline: {{stages: {}, shared_memory_bytes: {}, k_block_bytes: {}, scale_block_n: {}, "
          "straddling_stages: {}}}\n",
          c.pipeline->stages, c.pipeline->shared_memory_bytes, c.pipeline->k_block_bytes,
          c.pipeline->scale_block_n, c.pipeline->straddling_stages);
    }
    out += "    compute_efficiency: " + sourced(c.compute_efficiency) + "\n";
    out += "    memory_efficiency: " + sourced(c.memory_efficiency) + "\n";
    if (c.fixed_overhead_us) out += "    fixed_overhead_us: " + sourced(*c.fixed_overhead_us) + "\n";
    if (c.epilogue_overlap) out += "    epilogue_overlap: " + sourced(*c.epilogue_overlap) + "\n";
    if (c.widening_overlap) out += "    widening_overlap: " + sourced(*c.widening_overlap) + "\n";
    if (c.fold_efficiency) out += "    fold_efficiency: " + sourced(*c.fold_efficiency) + "\n";
    if (c.balance_exponent) out += "    balance_exponent: " + sourced(*c.balance_exponent) + "\n";
    if (c.error_band_pct) out += "    error_band_pct: " + sourced(*c.error_band_pct) + "\n";
  }
  return out;
}

}  // namespace v41sim
