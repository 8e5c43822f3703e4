// Kernel: one GPU kernel (or transfer) of a forward step, as the graph
// builder sees it: what it computes, on which math unit, over what shape, and
// how many FLOPs and HBM bytes that takes. Timing is the cost model's job.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/model/element_format.h"

namespace v41sim {

// Kernel classes share a tile shape and efficiencies in the calibration file.
enum class KernelClass {
  kGemm,         // dense projection: m tokens x n outputs x k inputs (batch = groups)
  kGroupedGemm,  // MoE experts: batch = experts, m = tokens per expert
  kAttention,    // m query tokens x n keys per query, batch = heads, k = qk + v dims
  kIndexer,      // indexer logits: m queries x n positions, batch = heads
  kTopK,         // selection over n scores for m rows
  kElementwise,  // norms, RoPE, quantize, pooling, mHC mixing: m rows x n values
  kAllToAll,     // EP dispatch / combine over the scale-up (NVLink) or scale-out network
  kHostCopy,     // host memory -> HBM over PCIe / C2C (Engram prefetch)
};
inline constexpr int kKernelClassCount = 8;

// EP transfers and host copies are timed on their links, not by a class's
// tiles and efficiencies (which only the compute classes have).
bool timed_on_links(KernelClass kernel_class);

// Which math unit does the arithmetic (the storage format may be narrower).
enum class MathType { kBf16, kFp8, kFp4, kFp32 };

enum class Stream { kCompute, kCommunication, kHostCopy };

struct KernelShape {
  int64_t m = 1;
  int64_t n = 1;
  int64_t k = 1;
  int64_t batch = 1;
};

// Values the kernel's tensor math takes from a narrower storage format (FP8
// or FP4 cache entries, FP4 weights), counted once per pass over them: per
// read for gathered cache entries; once per weight for GEMMs, whose M tiles
// each make their own pass (the cost model multiplies). Whether a value must
// be widened on the CUDA cores first depends on the GPU's tensor cores, so
// that is the cost model's call.
struct NarrowValues {
  double fp8 = 0;  // e4m3 / e5m2
  double fp4 = 0;  // e2m1
  void add(ElementFormat format, double count);
  bool operator==(const NarrowValues&) const = default;
};

// The two operands of a GEMM as its tiles load them: bytes per value of the
// m x k row operand (activations) and the n x k column operand (weights,
// block scales included). Zero for kernels that are not GEMMs.
struct GemmOperands {
  double row_bytes = 0;
  double column_bytes = 0;
  bool operator==(const GemmOperands&) const = default;
};

// How a kernel cuts its work into CTA tiles: by its class's rule (the
// graph's kernels), by splitting K to fill the SMs (cuBLAS), in fixed tiles
// it never splits (a measured kernel of our own), or as a weight-only W4A16
// kernel does (Marlin's: the class's weight_only_tile). Kernels of fixed or
// weight-only tiles widen their narrow operands in every M tile: they have no
// widening pass of their own to choose.
struct Tiling {
  enum class Rule { kClass, kSplit, kFixed, kWeightOnly };
  Rule rule = Rule::kClass;
  int64_t m = 0;  // kFixed
  int64_t n = 0;
  bool operator==(const Tiling&) const = default;
};

struct Kernel {
  std::string name;
  KernelClass kernel_class = KernelClass::kElementwise;
  MathType math = MathType::kBf16;
  Stream stream = Stream::kCompute;
  KernelShape shape;
  double flops = 0;
  double hbm_bytes = 0;  // DRAM traffic (reads + writes)
  // Of hbm_bytes, reads of data an earlier kernel of the step just read (a
  // Reuse layer gathering the entries its source layer gathered): served from
  // L2 when the working set fits, at the cost model's discretion.
  double l2_reuse_bytes = 0;
  // Of hbm_bytes, what tiles move outside their main loop: the output a GEMM's
  // epilogue writes; attention's query rows loaded before and outputs written
  // after (how much of it overlaps the main loop is the cost model's call).
  double epilogue_bytes = 0;
  NarrowValues narrow;
  // Accumulator values the CUDA cores fold into the output after the tensor
  // math, each through a max and a multiply-add: the indexer's ReLU and head
  // weight, one per query x position x head, summed over the heads (DeepGEMM's
  // mqa_logits kernels: fmaxf, then an FFMA, or half an FFMA2 on sm_100).
  double folded_values = 0;
  GemmOperands operands;
  Tiling tiling;
  // What a GEMM's row operand is ("attn_input", "q_latent"): GEMMs of one
  // input may run as one (projection_fusion.h). Empty: never fused.
  std::string input;
  double link_bytes = 0;         // bytes over NVLink / NIC / host link, for transfers
  double off_node_fraction = 0;  // share of link_bytes that leaves the NVLink domain
  // EP transfer by the low-latency kernels decode uses (DeepEP's LL mode: a
  // message per routed copy from a few SMs), which reach less of NVLink.
  bool low_latency = false;
};

std::string_view class_key(KernelClass kernel_class);  // "gemm", "grouped_gemm", ...
std::string_view math_name(MathType math);

}  // namespace v41sim
