// KernelFactory: builds Kernel records with FLOPs and bytes from shapes, so
// every block builder counts a GEMM, a norm or a transfer the same way.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/graph/kernel.h"
#include "sim/model/block_scaled_format.h"

namespace v41sim {

// Activation storage: FP8 into FP8 GEMMs (with negligible scales), BF16 elsewhere.
inline constexpr double kFp8ActivationBytes = 1.0;
inline constexpr double kBf16ActivationBytes = 2.0;
inline constexpr double kFp32Bytes = 4.0;

// The output a GEMM's epilogue writes, by the simulator's convention: BF16
// activations, rows x n per group. A measured row without its own count
// takes this too (measurement_file.cpp).
inline double gemm_epilogue_bytes(double rows, double n, double groups = 1) {
  return rows * n * groups * kBf16ActivationBytes;
}

// What a GEMM's row operand (activations) takes per value: FP8 into FP8
// math, BF16 into BF16 (and FP32) math.
inline double gemm_row_operand_bytes(MathType math) {
  return math == MathType::kBf16 || math == MathType::kFp32 ? kBf16ActivationBytes : kFp8ActivationBytes;
}

// The math a GEMM over `weights` runs: FP8 activations where the weights are
// stored in 8 bits or fewer (DeepGEMM's path; FP4 weights widened in registers
// or taken natively), else 16-bit math on BF16 activations (a BF16 checkpoint
// runs BF16 GEMMs at BF16's tensor rate; wider weights are served as BF16).
MathType gemm_math_for(const BlockScaledFormat& weights);
// Bytes a value of the activations such a GEMM takes (what quantizing
// kernels write and transfers carry ahead of it).
inline double gemm_row_bytes_for(const BlockScaledFormat& weights) {
  return gemm_row_operand_bytes(gemm_math_for(weights));
}

class KernelFactory {
 public:
  // Room for a layer's kernels up front: growing the vector would copy every
  // kernel (and its names) each time it doubles.
  explicit KernelFactory(std::vector<Kernel>& out) : out_(out) { out_.reserve(kLayerKernelsReserved); }
  static constexpr std::size_t kLayerKernelsReserved = 48;

  // tokens x k -> tokens x n per group; weights n x k per group in `weights` format.
  Kernel& gemm(std::string name, double tokens, double n, double k, const BlockScaledFormat& weights,
               MathType math, double groups = 1);
  // A GEMM in the math its weights allow (gemm_math_for).
  Kernel& gemm_for_weights(std::string name, double tokens, double n, double k,
                           const BlockScaledFormat& weights, double groups = 1) {
    return gemm(std::move(name), tokens, n, k, weights, gemm_math_for(weights), groups);
  }
  // Grouped expert GEMM: `experts_touched` weight matrices are read; `tokens`
  // rows in all, in the math gemm_math_for(weights) gives unless `math` says.
  Kernel& grouped_gemm(std::string name, double tokens, double experts_touched, double n, double k,
                       const BlockScaledFormat& weights, std::optional<MathType> math = std::nullopt);
  // A memory-streaming kernel: `rows` x `width` items, `bytes` of traffic, `ops` vector ops.
  Kernel& elementwise(std::string name, double rows, double width, double bytes, double ops = 0);
  // A top-k selection: `rows` rows of up to `width` FP32 scores, `values` scores
  // in all read (rows may be shorter than `width`), `selected` indices written.
  Kernel& topk(std::string name, int64_t rows, int64_t width, double values, double selected);
  Kernel& push(Kernel kernel);
  std::vector<Kernel>& kernels() { return out_; }

 private:
  std::vector<Kernel>& out_;
};

}  // namespace v41sim
