#include "sim/cost/kernel_cost.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>

namespace v41sim {
namespace {

// A tail (or an under-filled last wave) is called out once it costs this much
// over the ideal division of the work.
constexpr double kTailThreshold = 1.3;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool is_gemm(KernelClass c) { return c == KernelClass::kGemm || c == KernelClass::kGroupedGemm; }

// A kernel that cuts its own tiles (ours, measured; a weight-only W4A16
// kernel's): never narrowed or split by its class's rule, and with no
// widening pass of its own to choose (Tiling).
bool own_tiles(const Kernel& k) {
  return k.tiling.rule == Tiling::Rule::kFixed || k.tiling.rule == Tiling::Rule::kWeightOnly;
}

// A class's narrowing is DeepGEMM's, whose kernels take FP8 operands (FP4
// weights widened to FP8); BF16 and FP32 GEMMs run on cuBLAS, which splits K.
bool narrows(const Kernel& k, const ClassCost& cls) {
  return cls.narrowing && k.tiling.rule == Tiling::Rule::kClass && is_gemm(k.kernel_class) &&
         (k.math == MathType::kFp8 || k.math == MathType::kFp4);
}

// Two pieces of work on one SM, `overlap` of the shorter hidden under the longer.
double overlapped(double a, double b, double overlap) {
  return std::max(a, b) + (1.0 - overlap) * std::min(a, b);
}

// A tile's math and loads: the longer of the two where the class has no
// balance exponent; else their p-norm, which stays near the longer one while
// the other is small and adds to it as the two approach each other (a tile
// near the balance point stalls on one, then the other).
double balanced(double math, double loads, const std::optional<SourcedValue>& exponent) {
  const double longer = std::max(math, loads);
  if (!exponent || longer <= 0) return longer;
  const double p = exponent->value();
  return longer * std::pow(1.0 + std::pow(std::min(math, loads) / longer, p), 1.0 / p);
}

}  // namespace

KernelCostModel::CacheKey KernelCostModel::key_of(const Kernel& k) {
  // The small enumerations share a word (a smaller key: the table outgrows the CPU's caches).
  const uint64_t kinds = static_cast<uint64_t>(k.kernel_class) | static_cast<uint64_t>(k.math) << 16 |
                         static_cast<uint64_t>(k.tiling.rule) << 32 |
                         static_cast<uint64_t>(k.low_latency) << 48;
  return {{kinds, static_cast<uint64_t>(k.shape.m), static_cast<uint64_t>(k.shape.n),
           static_cast<uint64_t>(k.shape.k), static_cast<uint64_t>(k.shape.batch),
           std::bit_cast<uint64_t>(k.flops), std::bit_cast<uint64_t>(k.hbm_bytes),
           std::bit_cast<uint64_t>(k.l2_reuse_bytes), std::bit_cast<uint64_t>(k.epilogue_bytes),
           std::bit_cast<uint64_t>(k.link_bytes), std::bit_cast<uint64_t>(k.off_node_fraction),
           std::bit_cast<uint64_t>(k.narrow.fp8), std::bit_cast<uint64_t>(k.narrow.fp4),
           std::bit_cast<uint64_t>(k.folded_values), std::bit_cast<uint64_t>(k.operands.row_bytes),
           std::bit_cast<uint64_t>(k.operands.column_bytes), static_cast<uint64_t>(k.tiling.m),
           static_cast<uint64_t>(k.tiling.n)}};
}

std::string_view bound_name(Bound bound) {
  switch (bound) {
    case Bound::kCompute:
      return "compute";
    case Bound::kMemory:
      return "memory";
    case Bound::kWidening:
      return "widening";
    case Bound::kFold:
      return "fold";
    case Bound::kLatency:
      return "latency";
    case Bound::kLaunch:
      return "launch";
    case Bound::kTail:
      return "tail";
    case Bound::kLink:
      return "link";
  }
  return "?";
}

KernelCostModel::KernelCostModel(const GpuProfile& gpu, CostParams params, bool cuda_graph)
    : gpu_(gpu),
      params_(std::move(params)),
      cuda_graph_(cuda_graph),
      sms_(gpu.sm_count.value()),
      hbm_bytes_per_s_(gpu.hbm_bytes_per_s.value()),
      l2_bytes_(gpu.l2_bytes.value()),
      sm_cycles_per_s_(gpu.fp32_vector_tflops.value() * 1e12 /
                       (2.0 * params_.widening.fp32_lanes_per_sm.value() * sms_)) {
  const SourcedValue& transfer_sms = params_.links.normal_transfer_sms;
  if (transfer_sms.value() >= sms_) {
    throw InputError(transfer_sms.where(),
                     fmt::format("expected fewer SMs than {}'s {:g}: compute needs some", gpu.name, sms_));
  }
}

double KernelCostModel::tensor_rate(MathType math, bool* fallback) const {
  switch (math) {
    case MathType::kFp4:
      if (gpu_.tensor.fp4_tflops.known()) return gpu_.tensor.fp4_tflops.value() * 1e12;
      *fallback = true;  // Hopper: FP4 operands are widened and run on the FP8 units
      return gpu_.tensor.fp8_tflops.value() * 1e12;
    case MathType::kFp8:
      return gpu_.tensor.fp8_tflops.value() * 1e12;
    case MathType::kBf16:
      return gpu_.tensor.bf16_tflops.value() * 1e12;
    case MathType::kFp32:
      return gpu_.fp32_vector_tflops.value() * 1e12;
  }
  return 0;
}

// Widening runs at the class's achieved share of the CUDA cores' issue rate
// (not carried by the per-SM tensor-rate rule: that cap is on tensor cores).
double KernelCostModel::widening_rate(const ClassCost& cls) const {
  return sm_cycles_per_s_ * cls.compute_efficiency.value();
}

double KernelCostModel::widening_cycles(const Kernel& k) const {
  const WideningCost& w = params_.widening;
  // FP4 operands go to FP8 or FP4 math as stored where the tensor cores take
  // FP4 (Blackwell, mixed FP8 x FP4 included), and are widened to FP8 where not.
  const bool fp4_native = gpu_.tensor.fp4_tflops.known();
  double cycles = 0;
  switch (k.math) {
    case MathType::kBf16:
    case MathType::kFp32:
      cycles = k.narrow.fp8 * w.fp8_to_bf16_cycles.value() + k.narrow.fp4 * w.fp4_to_bf16_cycles();
      break;
    case MathType::kFp8:
    case MathType::kFp4:
      cycles = fp4_native ? 0.0 : k.narrow.fp4 * w.fp4_to_fp8_cycles();
      break;
  }
  return cycles;
}

// A class whose kernels fold has its fold efficiency (the priors' loader
// requires it of the indexer, the one class that folds).
double KernelCostModel::fold_efficiency(const Kernel& k, const ClassCost& cls) {
  if (!cls.fold_efficiency) {
    throw std::logic_error("kernel " + k.name + " folds values, but its class " +
                           std::string(class_key(k.kernel_class)) + " has no fold_efficiency");
  }
  return cls.fold_efficiency->value();
}

// Consecutive step shapes repeat most of their kernels: a table per thread,
// direct-mapped by the key's hash, keeps the latest kernel of each slot. A
// kernel it does not hold is timed again, which costs about what a lookup in
// a shared table of every kernel timed did (that table outgrew the CPU's
// caches: each lookup missed in them, and held a lock), and takes no memory
// beyond the slots (README: Performance). A slot holds the timing its key
// gives, so whether it answers changes no figure.
struct KernelCostModel::RecentKernels {
  static constexpr std::size_t kSlots = 4096;  // of under 300 bytes: about 1 MB a thread
  struct Slot {
    uint64_t model = 0;  // the serial of the model it came from; 0: empty
    CacheKey key;
    KernelTiming timing;
  };
  std::vector<Slot> slots = std::vector<Slot>(kSlots);
  Slot& at(std::size_t hash) { return slots[hash % kSlots]; }
};

uint64_t KernelCostModel::new_serial() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

KernelCostModel::RecentKernels& KernelCostModel::recent_kernels() {
  thread_local RecentKernels recent;
  return recent;
}

KernelTiming KernelCostModel::time(const Kernel& kernel) const { return time(std::span(&kernel, 1)).front(); }

std::vector<KernelTiming> KernelCostModel::time(std::span<const Kernel> kernels) const {
  std::vector<KernelTiming> timings;
  timings.reserve(kernels.size());
  RecentKernels& recent = recent_kernels();
  for (const Kernel& k : kernels) {
    const CacheKey key = key_of(k);
    RecentKernels::Slot& slot = recent.at(absl::Hash<CacheKey>{}(key));
    if (slot.model != serial_ || slot.key != key) slot = {serial_, key, timed(k)};
    timings.push_back(slot.timing);
  }
  return timings;
}

KernelTiming KernelCostModel::timed(const Kernel& k) const {
  return timed_on_links(k.kernel_class) ? transfer(k) : compute_kernel(k);
}

// A GEMM whose weights need widening either widens them in every M tile, or,
// when M spans many tiles, once in a pass of its own ahead of a plain FP8
// GEMM (which then reads FP8 weights): whichever is faster, as a library
// picking between the two would (the harness times both).
KernelTiming KernelCostModel::compute_kernel(const Kernel& k) const {
  const double cycles = widening_cycles(k);
  const bool gemm = is_gemm(k.kernel_class);
  const TileShape tile = tile_shape(k, params_.of(k.kernel_class));
  const int64_t m_tiles = gemm ? ceil_div(k.shape.m, tile.m) : 1;
  KernelTiming in_tiles = tiled(k, tile, cycles * static_cast<double>(m_tiles));
  if (!gemm || cycles == 0 || m_tiles == 1 || own_tiles(k)) return in_tiles;
  const KernelTiming ahead = widened_ahead(k, tile, cycles);
  return ahead.time_us < in_tiles.time_us ? ahead : in_tiles;
}

// The pass reads the values as stored and writes them in the math's format,
// which the GEMM then reads instead. (Values the math takes as stored stay.)
KernelTiming KernelCostModel::widened_ahead(const Kernel& k, TileShape tile, double cycles) const {
  const ClassCost& cls = params_.of(k.kernel_class);
  const double fp4_bytes = bits_of(ElementFormat::kFp4E2M1) / 8.0;
  const double fp8_bytes = bits_of(ElementFormat::kFp8E4M3) / 8.0;
  const bool to_bf16 = k.math == MathType::kBf16 || k.math == MathType::kFp32;
  const double math_bytes = to_bf16 ? bits_of(ElementFormat::kBf16) / 8.0 : fp8_bytes;
  const double widened_fp8 = to_bf16 ? k.narrow.fp8 : 0.0;
  const double widened_fp4 = k.narrow.fp4;
  const double stored = widened_fp8 * fp8_bytes + widened_fp4 * fp4_bytes;
  const double written = (widened_fp8 + widened_fp4) * math_bytes;
  Kernel plain = k;
  plain.narrow = {};
  plain.hbm_bytes += written - stored;
  KernelTiming ahead = tiled(plain, tile, 0.0);
  const double pass_s = std::max(cycles / (widening_rate(cls) * sms_),
                                 (stored + written) / (hbm_bytes_per_s_ * cls.memory_efficiency.value()));
  ahead.widening_us = pass_s * 1e6;
  ahead.busy_us += pass_s * 1e6;
  ahead.time_us += pass_s * 1e6 + ahead.overhead_us;  // the pass is a kernel of its own
  ahead.widened_ahead = true;
  return ahead;
}

// DeepGEMM's rule where the class narrows its tiles: the fewest waves, then
// the fullest last wave, then the narrowest tile.
KernelCostModel::TileShape KernelCostModel::tile_shape(const Kernel& k, const ClassCost& cls) const {
  if (k.tiling.rule == Tiling::Rule::kFixed) return {k.tiling.m, k.tiling.n};
  if (k.tiling.rule == Tiling::Rule::kWeightOnly) {
    if (!cls.weight_only_tile) {
      throw std::logic_error("a weight-only kernel of class " + std::string(class_key(k.kernel_class)) +
                             ", which has no weight_only_tile");
    }
    return {cls.weight_only_tile->m, cls.weight_only_tile->n};
  }
  if (!narrows(k, cls)) return {cls.tile_m, cls.tile_n};
  const TileNarrowing& w = *cls.narrowing;
  const int64_t sms = static_cast<int64_t>(sms_);
  const int64_t tile_m = k.shape.m <= w.tile_m_min ? w.tile_m_min : cls.tile_m;
  TileShape best{tile_m, cls.tile_n};
  int64_t best_waves = 0, best_last = 0;
  for (int64_t n = w.tile_n_min; n <= cls.tile_n; n += w.tile_n_step) {
    const int64_t tiles = k.shape.batch * ceil_div(k.shape.m, tile_m) * ceil_div(k.shape.n, n);
    const int64_t waves = ceil_div(tiles, sms);
    const int64_t last = tiles % sms == 0 ? sms : tiles % sms;
    if (best_waves == 0 || waves < best_waves || (waves == best_waves && last > best_last)) {
      best = {tile_m, n};
      best_waves = waves;
      best_last = last;
    }
  }
  return best;
}

// Seconds for one tile's load pipeline to bring `k_slice` of its operands:
// a memory latency per ring of stages (LoadPipeline); zero where the class
// models no pipeline or the kernel is not a GEMM.
double KernelCostModel::pipeline_seconds(const Kernel& k, const ClassCost& cls, TileShape tile,
                                         int64_t k_slice) const {
  if (!cls.pipeline || k.operands.row_bytes <= 0) return 0.0;
  const LoadPipeline& p = *cls.pipeline;
  const TileShape extent = tile.over(k.shape);
  const double rows = static_cast<double>(extent.m);
  const double columns = static_cast<double>(extent.n);
  const double k_block = static_cast<double>(p.k_block_bytes) / k.operands.row_bytes;
  const double stage_bytes = k_block * (rows * k.operands.row_bytes + columns * k.operands.column_bytes);
  const double k_blocks = std::ceil(static_cast<double>(k_slice) / k_block);
  const double fit = std::floor(static_cast<double>(p.shared_memory_bytes) / stage_bytes);
  const int64_t ring = p.scale_block_n % tile.n == 0 ? p.stages : p.straddling_stages;
  const double stages = std::max(1.0, std::min({static_cast<double>(ring), fit, k_blocks}));
  return k_blocks / stages * params_.memory_latency_us.value() * 1e-6;
}

// Too few tiles to fill the SMs: GEMMs split their reduction (split-K),
// attention its keys (split-KV), down to split_min per slice; a class that
// narrows its tiles, or a kernel with fixed tiles, does not split.
int64_t KernelCostModel::split_count(const Kernel& k, const ClassCost& cls, TileShape tile,
                                     int64_t tiles) const {
  const int64_t sms = static_cast<int64_t>(sms_);
  const bool gemm = is_gemm(k.kernel_class);
  const bool splits = gemm || k.kernel_class == KernelClass::kAttention;
  const bool may_split = !narrows(k, cls) && !own_tiles(k);
  if (!params_.split_to_fill_sms || !may_split || !splits || tiles >= sms) return 1;
  const int64_t depth = gemm ? k.shape.k : ceil_div(k.shape.n, ceil_div(k.shape.n, tile.n));
  return std::clamp<int64_t>(sms / tiles, 1, std::max<int64_t>(1, depth / cls.split_min));
}

KernelTiming KernelCostModel::tiled(const Kernel& k, TileShape tile, double widen_cycles) const {
  const ClassCost& cls = params_.of(k.kernel_class);
  KernelTiming t;
  const int64_t sms = static_cast<int64_t>(sms_);
  const TileShape extent = tile.over(k.shape);
  t.tile_m = extent.m;
  t.tile_n = extent.n;
  const int64_t unsplit = k.shape.batch * ceil_div(k.shape.m, tile.m) * ceil_div(k.shape.n, tile.n);
  const int64_t split = split_count(k, cls, tile, unsplit);
  t.tiles = std::max<int64_t>(1, unsplit * split);
  t.waves = ceil_div(t.tiles, sms);
  const double tile_stream_s = pipeline_seconds(k, cls, tile, ceil_div(k.shape.k, split));
  const double fill_s = tile_stream_s > 0 ? params_.memory_latency_us.value() * 1e-6 : 0.0;

  const double rate =
      tensor_rate(k.math, &t.math_fallback) * params_.compute_efficiency(k.kernel_class, k.math);
  const double bandwidth = hbm_bytes_per_s_ * cls.memory_efficiency.value();
  const double per_sm_cap = bandwidth / sms_ * params_.sm_bandwidth_multiple.value();
  // Re-reads whose working set fits in L2 move at L2 bandwidth: count them
  // as fewer HBM-equivalent bytes.
  double bytes = k.hbm_bytes;
  if (k.l2_reuse_bytes > 0 && k.l2_reuse_bytes <= l2_bytes_ * params_.l2_resident_fraction.value()) {
    bytes -= k.l2_reuse_bytes * (1.0 - 1.0 / params_.l2_bandwidth_multiple.value());
  }
  // A tile's main loop overlaps its math with its reads; what it moves
  // outside that loop (the output write; attention's query load too) and the
  // kernel does not hide comes before or after. Every split slice moves its own.
  const double overlap = cls.epilogue_overlap ? cls.epilogue_overlap->value() : 1.0;
  bytes += k.epilogue_bytes * static_cast<double>(split - 1);  // the slices' partial results
  const double serial_bytes =
      std::min(bytes, k.epilogue_bytes * static_cast<double>(split) * (1.0 - overlap));
  const double tile_flops = k.flops / static_cast<double>(t.tiles);
  const double tile_bytes = (bytes - serial_bytes) / static_cast<double>(t.tiles);
  const double tile_serial_bytes = serial_bytes / static_cast<double>(t.tiles);
  const double widen_rate = widening_rate(cls);
  const double tile_widen_s = widen_cycles / static_cast<double>(t.tiles) / widen_rate;
  // The fold runs on the CUDA cores too, after the widening it shares them with,
  // beside the tensor math as the widening does, at its own share of their rate.
  const double fold_cycles = k.folded_values * params_.widening.fold_cycles();
  const double fold_rate = fold_cycles > 0 ? sm_cycles_per_s_ * fold_efficiency(k, cls) : 1.0;
  const double tile_fold_s = fold_cycles / static_cast<double>(t.tiles) / fold_rate;
  const double widen_overlap = cls.widening_overlap ? cls.widening_overlap->value() : 1.0;
  const double tile_math_s = tile_flops / (rate / sms_);
  const double tile_compute_s = overlapped(tile_math_s, tile_widen_s + tile_fold_s, widen_overlap);
  auto tile_seconds = [&](int64_t concurrent) {
    const double share = std::min(bandwidth / static_cast<double>(concurrent), per_sm_cap);
    // Loads: the HBM share or the pipeline's refills, whichever is slower; both
    // stall the math near balance (balancing the HBM share alone, with the
    // pipeline a separate maximum, fits DeepGEMM's 4096 x 2112 x 7168 at +14.5%, not +9.7%).
    const double loads = std::max(tile_bytes / share, tile_stream_s);
    return balanced(tile_compute_s, loads, cls.balance_exponent) + tile_serial_bytes / share;
  };
  const int64_t full_waves = t.tiles / sms;
  const int64_t remainder = t.tiles % sms;
  double seconds = static_cast<double>(full_waves) * (full_waves > 0 ? tile_seconds(sms) : 0.0);
  if (remainder > 0) seconds += tile_seconds(remainder);
  seconds += fill_s;  // the first stage arrives a latency after the start
  const int64_t busiest = std::min(t.tiles, sms);
  const double busiest_share = std::min(bandwidth / static_cast<double>(busiest), per_sm_cap);
  const bool stream_bound = tile_stream_s > std::max(tile_compute_s, tile_bytes / busiest_share);
  const double math_s = k.flops / rate;
  const double widen_s = widen_cycles / (widen_rate * sms_);
  const double fold_s = fold_cycles / (fold_rate * sms_);
  const double compute_s = overlapped(math_s, widen_s + fold_s, widen_overlap);
  const double memory_s = bytes / bandwidth;
  t.widening_us = widen_s * 1e6;
  t.fold_us = fold_s * 1e6;
  t.math_us = math_s * 1e6;
  t.memory_us = memory_s * 1e6;
  t.edge_us = serial_bytes / bandwidth * 1e6;
  t.pipeline_us = (tile_stream_s * static_cast<double>(t.waves) + fill_s) * 1e6;
  t.busy_us = seconds * 1e6 + (cls.fixed_overhead_us ? cls.fixed_overhead_us->value() : 0.0);
  t.roofline_us = std::max(compute_s, memory_s) * 1e6;
  t.overhead_us = (cuda_graph_ ? params_.graph_replay_overhead_us : params_.launch_overhead_us).value();
  t.time_us = t.busy_us + t.overhead_us;
  t.bound = bound_of(t, stream_bound, compute_s < memory_s);
  return t;
}

// Whichever term dominated: launch, the load pipeline, an under-filled last
// wave, or else the roofline's side (the CUDA cores' widening or fold, the
// longer of the two, where together they outlast the math).
Bound KernelCostModel::bound_of(const KernelTiming& t, bool stream_bound, bool memory_side) {
  if (t.overhead_us >= t.busy_us) return Bound::kLaunch;
  if (stream_bound) return Bound::kLatency;
  if (t.busy_us > kTailThreshold * t.roofline_us) return Bound::kTail;
  if (memory_side) return Bound::kMemory;
  if (t.widening_us + t.fold_us <= t.math_us) return Bound::kCompute;
  return t.fold_us > t.widening_us ? Bound::kFold : Bound::kWidening;
}

KernelTiming KernelCostModel::transfer(const Kernel& k) const {
  const LinkCost& links = params_.links;
  KernelTiming t;
  t.tiles = 1;
  t.waves = 1;
  t.bound = Bound::kLink;
  double seconds = 0;
  double latency_us = 0;
  if (k.kernel_class == KernelClass::kHostCopy) {
    seconds = k.link_bytes / (gpu_.host_link_bytes_per_s.value() * links.host_link_efficiency.value());
    latency_us = links.host_copy_latency_us.value();
  } else {
    const double off = k.link_bytes * k.off_node_fraction;
    const double on = k.link_bytes - off;
    const double nvlink = on / (gpu_.nvlink_bytes_per_s.value() * links.nvlink_efficiency.value());
    const double nic = off > 0 ? off / (gpu_.nic_bytes_per_s.value() * links.nic_efficiency.value()) : 0.0;
    seconds = std::max(nvlink, nic);
    // The low-latency kernels pay the same fixed cost inside a node as across nodes.
    const SourcedValue& fixed = k.low_latency ? links.all_to_all_latency_low_latency_us
                                : off > 0     ? links.all_to_all_latency_inter_us
                                              : links.all_to_all_latency_intra_us;
    latency_us = fixed.value();
  }
  t.busy_us = seconds * 1e6;
  t.roofline_us = t.busy_us;
  t.overhead_us = latency_us;
  t.time_us = t.busy_us + t.overhead_us;
  return t;
}

}  // namespace v41sim
