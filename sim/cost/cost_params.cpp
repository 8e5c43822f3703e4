#include "sim/cost/cost_params.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "sim/common/catalog.h"
#include "sim/common/yaml_reader.h"
#include "sim/cost/published_bands.h"
#include "sim/hw/gpu_profile_loader.h"

namespace v41sim {
namespace {

// A tile's rows or columns: a thread block's (GEMMs' in the hundreds), or all
// of a query's keys (attention's, up to the context). Far past any context a
// tile is a typo, and doubling it in a fit would overflow.
constexpr int64_t kLargestTile = int64_t{1} << 24;
// Narrowing tries each width from the narrowest to the class's tile for every
// shape: a few dozen (DeepGEMM's 16..128 by 8); thousands would stall a run.
constexpr int64_t kMostNarrowedWidths = 1024;

int64_t read_tile(const YamlNode& node) {
  const int64_t tile = node.as_positive_int();
  if (tile > kLargestTile) node.fail(fmt::format("expected a tile of 1 to {}, got {}", kLargestTile, tile));
  return tile;
}

TileNarrowing read_narrowing(const YamlNode& node, const ClassCost& c) {
  node.expect_only({"tile_m_min", "tile_n_min", "tile_n_step"});
  TileNarrowing t{node.required("tile_m_min").as_positive_int(),
                  node.required("tile_n_min").as_positive_int(),
                  node.required("tile_n_step").as_positive_int()};
  if (t.tile_m_min > c.tile_m) node.required("tile_m_min").fail("at most the class's tile_m");
  if (t.tile_n_min > c.tile_n) node.required("tile_n_min").fail("at most the class's tile_n");
  if ((c.tile_n - t.tile_n_min) / t.tile_n_step >= kMostNarrowedWidths) {
    node.required("tile_n_step")
        .fail(fmt::format(
            "expected at most {} widths from tile_n_min ({}) to the class's tile_n ({}), got a step "
            "of {}",
            kMostNarrowedWidths, t.tile_n_min, c.tile_n, t.tile_n_step));
  }
  return t;
}

// A prior within what the quantity can be: a wild value (a latency of days,
// an efficiency of 1e-300) would otherwise surface far away, as a simulated
// time out of range in some deployment, instead of at its own line.
SourcedValue read_within(const YamlNode& node, double least, double most, const char* what,
                         ValueRange range = ValueRange::kPositive) {
  SourcedValue v = read_sourced_value(node, range);
  if (v.value() < least || v.value() > most) {
    // A positive figure's floor of 0 is not in its range (read_sourced_value refuses 0 first).
    const std::string bounds = range == ValueRange::kPositive && least <= 0
                                   ? fmt::format("above 0 and at most {:g}", most)
                                   : fmt::format("of {:g} to {:g}", least, most);
    throw InputError(v.where(), fmt::format("expected {} {}, got {:g}", what, bounds, v.value()));
  }
  return v;
}

// The bounds: a fixed cost is under a second, an efficiency a share of peak
// above a thousandth, a bandwidth multiple between 1 and 100, a count of
// operations or lanes a value or an SM takes at most 4,096.
constexpr double kMostLatencyUs = 1e6;
constexpr double kLeastEfficiency = 1e-3;
SourcedValue read_latency(const YamlNode& node, ValueRange range = ValueRange::kPositive) {
  return read_within(node, 0, kMostLatencyUs, "a fixed cost in us", range);
}
SourcedValue read_efficiency(const YamlNode& node) {
  return read_within(node, kLeastEfficiency, 1.0, "an efficiency, a share of peak,");
}

LoadPipeline read_pipeline(const YamlNode& node) {
  node.expect_only({"stages", "shared_memory_bytes", "k_block_bytes", "scale_block_n", "straddling_stages"});
  auto field = [&node](const char* key) { return node.required(key).as_positive_int(); };
  return {field("stages"), field("shared_memory_bytes"), field("k_block_bytes"), field("scale_block_n"),
          field("straddling_stages")};
}

ClassCost read_class(const YamlNode& node) {
  node.expect_only({"tile_m", "tile_n", "split_min", "narrowing", "weight_only_tile", "pipeline",
                    "compute_efficiency", "memory_efficiency", "fixed_overhead_us", "epilogue_overlap",
                    "widening_overlap", "fold_efficiency", "balance_exponent", "error_band_pct"});
  ClassCost c;
  c.tile_m = read_tile(node.required("tile_m"));
  c.tile_n = read_tile(node.required("tile_n"));
  c.split_min = node.required("split_min").as_positive_int();
  if (const auto narrowing = node.optional("narrowing")) c.narrowing = read_narrowing(*narrowing, c);
  if (const auto tile = node.optional("weight_only_tile")) {
    tile->expect_only({"m", "n"});
    c.weight_only_tile = WeightOnlyTile{read_tile(tile->required("m")), read_tile(tile->required("n"))};
  }
  if (const auto pipeline = node.optional("pipeline")) c.pipeline = read_pipeline(*pipeline);
  c.compute_efficiency = read_efficiency(node.required("compute_efficiency"));
  c.memory_efficiency = read_efficiency(node.required("memory_efficiency"));
  if (const auto overhead = node.optional("fixed_overhead_us")) c.fixed_overhead_us = read_latency(*overhead);
  if (const auto overlap = node.optional("epilogue_overlap")) {
    c.epilogue_overlap = read_sourced_value(*overlap, ValueRange::kNonNegative);
    if (c.epilogue_overlap->value() > 1.0) overlap->fail("a share of the epilogue, at most 1");
  }
  if (const auto overlap = node.optional("widening_overlap")) {
    c.widening_overlap = read_sourced_value(*overlap, ValueRange::kNonNegative);
    if (c.widening_overlap->value() > 1.0) overlap->fail("a share of the widening, at most 1");
  }
  if (const auto fold = node.optional("fold_efficiency")) c.fold_efficiency = read_efficiency(*fold);
  if (const auto exponent = node.optional("balance_exponent")) {
    c.balance_exponent = read_within(*exponent, 1.0, 100.0, "a p-norm's exponent");
  }
  if (const auto band = node.optional("error_band_pct"))
    c.error_band_pct = read_sourced_value(*band, ValueRange::kNonNegative);
  return c;
}

// A class timed on its links has no tiles or efficiencies: its entry, where
// there is one, holds only its error band (a calibration's or the priors').
ClassCost read_link_timed_class(const YamlNode& node) {
  node.expect_only({"error_band_pct"});
  ClassCost c;
  if (const auto band = node.optional("error_band_pct"))
    c.error_band_pct = read_sourced_value(*band, ValueRange::kNonNegative);
  return c;
}

LinkCost read_links(const YamlNode& node) {
  node.expect_only({"nvlink_efficiency", "nic_efficiency", "host_link_efficiency",
                    "all_to_all_latency_intra_us", "all_to_all_latency_inter_us",
                    "all_to_all_latency_low_latency_us", "host_copy_latency_us", "normal_transfer_sms"});
  auto efficiency = [&node](const char* key) { return read_efficiency(node.required(key)); };
  auto latency = [&node](const char* key) { return read_latency(node.required(key)); };
  return {efficiency("nvlink_efficiency"),
          efficiency("nic_efficiency"),
          efficiency("host_link_efficiency"),
          latency("all_to_all_latency_intra_us"),
          latency("all_to_all_latency_inter_us"),
          latency("all_to_all_latency_low_latency_us"),
          latency("host_copy_latency_us"),
          read_within(node.required("normal_transfer_sms"), 1, 1024, "SMs")};
}

WideningCost read_widening(const YamlNode& node) {
  node.expect_only({"fp32_lanes_per_sm", "integer_ops_per_clock", "bf16x2_ops_per_clock",
                    "fp8_to_bf16_cycles", "fp4_to_fp8_integer_ops", "fp4_to_bf16_integer_ops",
                    "fp4_to_bf16_multiplies", "compare_ops_per_clock"});
  // Lanes and throughputs an SM has, cycles and operations a value takes.
  auto field = [&node](const char* key) { return read_within(node.required(key), 1e-3, 4096, "a count"); };
  return {field("fp32_lanes_per_sm"),      field("integer_ops_per_clock"),  field("bf16x2_ops_per_clock"),
          field("fp8_to_bf16_cycles"),     field("fp4_to_fp8_integer_ops"), field("fp4_to_bf16_integer_ops"),
          field("fp4_to_bf16_multiplies"), field("compare_ops_per_clock")};
}

TransferRule read_transfer(const YamlNode& node) {
  node.expect_only({"same_architecture_extra_pct", "cross_architecture_extra_pct"});
  return {read_sourced_value(node.required("same_architecture_extra_pct"), ValueRange::kNonNegative),
          read_sourced_value(node.required("cross_architecture_extra_pct"), ValueRange::kNonNegative)};
}

}  // namespace

std::optional<double> CostParams::error_band_pct(KernelClass kernel_class) const {
  const auto& band = of(kernel_class).error_band_pct;
  if (!band) return std::nullopt;
  if (of(kernel_class).error_band_from_published) return band->value();
  switch (extrapolation) {
    case Extrapolation::kNone:
      return band->value();
    case Extrapolation::kSameArchitecture:
      return band->value() + transfer.same_architecture_extra_pct.value();
    case Extrapolation::kCrossArchitecture:
      return band->value() + transfer.cross_architecture_extra_pct.value();
  }
  return std::nullopt;
}

double CostParams::compute_efficiency(KernelClass kernel_class, MathType math) const {
  const double measured = of(kernel_class).compute_efficiency.value();
  if (!per_sm_rate_ratio) return measured;
  return transfer_compute_efficiency(measured, per_sm_rate_ratio->for_math(math));
}

std::string CostParams::label() const {
  std::string out = status;
  const bool carried = extrapolation != Extrapolation::kNone;
  // The priors were published on a GPU too: say which, unless carried from it (said next).
  if (status == "uncalibrated" && !efficiencies_measured_on.empty())
    out += carried ? ": published priors" : ": published priors from " + efficiencies_measured_on;
  if (extrapolation == Extrapolation::kSameArchitecture) {
    out +=
        fmt::format(", extrapolated from {} within the architecture (bands widened by {:g} points, assumed)",
                    extrapolated_from, transfer.same_architecture_extra_pct.value());
  } else if (extrapolation == Extrapolation::kCrossArchitecture) {
    out += fmt::format(", extrapolated from {} across architectures (bands widened by {:g} points, assumed)",
                       extrapolated_from, transfer.cross_architecture_extra_pct.value());
  }
  if (held_out_mape_pct >= 0) out += fmt::format(", held-out MAPE up to {:.1f}%", held_out_mape_pct);
  if (whole_steps) {
    out += fmt::format(
        "; on {} whole steps that serving engines published, the model's throughput is {:+.0f}% to {:+.0f}% "
        "against theirs (v41sim validate says what it lacks there)",
        whole_steps->references, whole_steps->least_pct, whole_steps->most_pct);
  }
  if (serving_benchmarks) {
    out += fmt::format("; on {} whole serving benchmarks engines published, {:+.0f}% to {:+.0f}%",
                       serving_benchmarks->references, serving_benchmarks->least_pct,
                       serving_benchmarks->most_pct);
  }
  if (per_sm_rate_ratio) {
    out += fmt::format(
        ", compute efficiencies carried from {} at {:.2f}x its FP8 and {:.2f}x its BF16 tensor rate per SM "
        "(assumed: non-tensor time per SM unchanged)",
        per_sm_rate_ratio->reference_gpu, per_sm_rate_ratio->fp8, per_sm_rate_ratio->bf16);
  }
  return out + " (" + file + ")";
}

CostParams load_cost_params_file(const std::string& path) {
  const YamlNode root = YamlNode::load_file(path);
  root.expect_only({"status", "source", "efficiencies_measured_on", "held_out_mape_pct", "launch_overhead_us",
                    "graph_replay_overhead_us", "sm_bandwidth_multiple", "l2_bandwidth_multiple",
                    "l2_resident_fraction", "memory_latency_us", "split_to_fill_sms", "widening", "links",
                    "transfer", "classes"});
  CostParams p;
  p.file = path;
  p.status = root.required("status").as_string();
  if (p.status != "uncalibrated" && p.status != "calibrated") {
    root.required("status").fail("expected uncalibrated or calibrated");
  }
  p.source = root.required("source").as_string();
  if (const auto on = root.optional("efficiencies_measured_on")) {
    p.efficiencies_measured_on = on->as_string();
    p.efficiencies_measured_on_at = on->location();
  }
  if (p.status == "calibrated")
    p.held_out_mape_pct = root.required("held_out_mape_pct").as_non_negative_double();
  p.launch_overhead_us = read_latency(root.required("launch_overhead_us"));
  p.graph_replay_overhead_us = read_latency(root.required("graph_replay_overhead_us"));
  p.sm_bandwidth_multiple = read_within(root.required("sm_bandwidth_multiple"), 1, 100, "a multiple");
  p.l2_bandwidth_multiple = read_within(root.required("l2_bandwidth_multiple"), 1, 100, "a multiple");
  p.l2_resident_fraction = read_within(root.required("l2_resident_fraction"), 0, 1, "a share of L2");
  p.memory_latency_us = read_latency(root.required("memory_latency_us"));
  p.split_to_fill_sms = root.required("split_to_fill_sms").as_bool();
  p.widening = read_widening(root.required("widening"));
  p.links = read_links(root.required("links"));
  p.transfer = read_transfer(root.required("transfer"));
  const YamlNode classes = root.required("classes");
  for (int i = 0; i < kKernelClassCount; ++i) {
    const auto kernel_class = static_cast<KernelClass>(i);
    ClassCost& c = p.classes[static_cast<std::size_t>(i)];
    if (!timed_on_links(kernel_class)) {
      const YamlNode entry = classes.required(class_key(kernel_class));
      c = read_class(entry);
      // The W4A16 engine choice runs the routed experts' GEMMs on its tile.
      if (kernel_class == KernelClass::kGroupedGemm && !c.weight_only_tile)
        entry.required("weight_only_tile");
      // The indexer's logits fold their heads on the CUDA cores (Kernel::folded_values).
      if (kernel_class == KernelClass::kIndexer && !c.fold_efficiency) entry.required("fold_efficiency");
    } else if (const auto entry = classes.optional(class_key(kernel_class))) {
      c = read_link_timed_class(*entry);
    }
  }
  std::string allowed;
  for (const auto& [key, node] : classes.entries()) {
    bool known = false;
    for (int i = 0; i < kKernelClassCount; ++i)
      known = known || class_key(static_cast<KernelClass>(i)) == key;
    if (!known) node.fail("unknown kernel class");
  }
  return p;
}

CalibrationChoice choose_calibration(const std::string& data_dir, const std::string& gpu_stem,
                                     const std::string& architecture) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(data_dir) / "validation" / "calibration";
  const fs::path own = dir / (gpu_stem + ".yaml");
  if (fs::exists(own)) return {own.string(), "", Extrapolation::kNone};
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string stem = entry.path().stem().string();
    if (entry.path().extension() == ".yaml" && stem != "defaults" && stem != "published_bands")
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::optional<CalibrationChoice> other_architecture;
  for (const fs::path& file : files) {
    const fs::path profile = fs::path(data_dir) / "hw_profiles" / file.filename();
    if (!fs::exists(profile)) continue;
    if (load_gpu_profile_file(profile.string()).architecture == architecture) {
      return {file.string(), file.stem().string(), Extrapolation::kSameArchitecture};
    }
    if (!other_architecture)
      other_architecture =
          CalibrationChoice{file.string(), file.stem().string(), Extrapolation::kCrossArchitecture};
  }
  if (other_architecture) return *other_architecture;
  return {(dir / "defaults.yaml").string(), "", Extrapolation::kNone};
}

CostParams load_calibration(const CalibrationChoice& choice) {
  CostParams params = load_cost_params_file(choice.path);
  params.extrapolated_from = choice.extrapolated_from;
  params.extrapolation = choice.extrapolation;
  return params;
}

CostParams load_calibration_for(const std::string& data_dir, const GpuProfile& gpu,
                                const std::string& gpu_stem, bool priors_only) {
  namespace fs = std::filesystem;
  const fs::path priors = fs::path(data_dir) / "validation" / "calibration" / "defaults.yaml";
  const CalibrationChoice choice = priors_only ? CalibrationChoice{priors.string(), "", Extrapolation::kNone}
                                               : choose_calibration(data_dir, gpu_stem, gpu.architecture);
  CostParams params = load_calibration(choice);
  params.file = path_in_data_dir(params.file, data_dir);  // labels read the same wherever the data sits
  const std::string bands = published_bands_path(data_dir);
  if (fs::exists(bands)) attach_published_bands(params, load_published_bands_file(bands), gpu, gpu_stem);
  const bool own = choice.extrapolation == Extrapolation::kNone && params.status == "calibrated";
  const std::string reference =
      own ? ""
          : (choice.extrapolated_from.empty() ? params.efficiencies_measured_on : choice.extrapolated_from);
  if (reference.empty() || reference == gpu_stem) return params;
  const fs::path profile = fs::path(data_dir) / "hw_profiles" / (reference + ".yaml");
  if (!fs::exists(profile)) {
    throw InputError(
        params.efficiencies_measured_on_at,
        "efficiencies_measured_on names no GPU profile: expected a file stem under hw_profiles/");
  }
  const GpuProfile reference_gpu = load_gpu_profile_file(profile.string());
  if (params.status == "uncalibrated") {  // the priors, carried from the GPU they were published on
    params.extrapolated_from = reference;
    params.extrapolation = reference_gpu.architecture == gpu.architecture ? Extrapolation::kSameArchitecture
                                                                          : Extrapolation::kCrossArchitecture;
  }
  params.per_sm_rate_ratio = per_sm_rate_ratio(gpu, reference_gpu, reference);
  return params;
}

}  // namespace v41sim
