// One routed expert's GEMM as V4.1 runs it: FP8 e4m3 activations (one
// per-tensor scale) times FP4 e2m1 weights with an e8m0 scale per 32 along K
// (MXFP4, 18.8 MB per expert), accumulated in FP32.
//   a: m x k FP8 codes; w: n x k/2 packed FP4 + n x k/32 e8m0 scales; d: m x n float
// Two CUDA paths: our W4A8 kernel keeps the weights FP4 in memory and widens
// them in registers (what the simulator's grouped GEMM models); the cuBLASLt
// path widens them to FP8 in memory first (exact while the group scales of a
// matrix span <= 2^8) and runs cuBLASLt's FP8 GEMM, recorded as a baseline.
// Hopper has no FP4 MMA, so FP4 experts run on FP8 tensor cores either way.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace v41sim::kernels {

inline constexpr int kWeightScaleGroup = 32;

struct ExpertWeights {
  int64_t n = 0;
  int64_t k = 0;
  std::vector<uint8_t> packed;  // n x k/2, low nibble first
  std::vector<uint8_t> scales;  // n x k/32, e8m0
};

ExpertWeights quantize_expert_weights(const std::vector<float>& w, int64_t n, int64_t k);
float expert_weight_value(const ExpertWeights& w, int64_t row, int64_t col);

// d = a x w^T with a = codes x a_scale.
std::vector<float> expert_gemm_reference(const std::vector<uint8_t>& a, float a_scale, int64_t m,
                                         const ExpertWeights& w);
// The same for a launch's experts: a is experts x m x k, the result the
// experts' outputs one after another.
std::vector<float> experts_gemm_reference(const std::vector<uint8_t>& a, float a_scale, int64_t m,
                                          const std::vector<ExpertWeights>& experts);

// Test inputs: `experts` n x k weight matrices of normal values (seeds
// seed, seed + 1, ...), value (row, col) of expert e times
// 2^exponent(row, col, e), quantized; so the group scales vary as a test needs.
std::vector<ExpertWeights> scaled_expert_weights(
    int64_t experts, int64_t n, int64_t k, uint32_t seed,
    const std::function<int(int64_t, int64_t, int64_t)>& exponent);

// FP8 x FP4 on the tensor cores with the weights kept as FP4 in memory (our
// kernel: cuBLASLt has no such path on Hopper), a rank's experts in one
// launch, m rows each. Device pointers; scales per tensor (activations) and
// per 32 weights along k (e8m0). n a multiple of 64, k of 128, any m > 0.
struct ExpertGemmW4A8 {
  const uint8_t* activations;     // experts x m x k, e4m3
  const uint8_t* packed_weights;  // experts x n x k/2, e2m1, low nibble first
  const uint8_t* weight_scales;   // experts x n x k/32, e8m0
  float* out;                     // experts x m x n
  float activation_scale;
  int64_t experts, m, n, k;
};
void run_expert_gemm_w4a8(const ExpertGemmW4A8& gemm);  // launches on the default stream

// The same on Hopper's warpgroup MMA (wgmma, sm_90a: H100, H200, H20, H800),
// for prefill shapes: 128 x 128 tiles, the weights widened to FP8 in shared
// memory with each row's four group scales in a k-block of 128 folded in
// relative to the largest, which promotes the block's sums (exact while they
// lie within 2^8 of each other; kernels/gemm/expert_gemm_w4a8_wgmma_tiling.h).
// n and k multiples of 128. Throws where the device is not sm_90
// (kernels/common/cuda_device.h: sm90a_device).
// Two schedules: every warpgroup loads, widens and computes in step, or one
// warpgroup loads and widens for two that only compute (warp-specialized,
// handing stages over through mbarriers).
enum class WgmmaSchedule { kLockstep, kWarpSpecialized };
void run_expert_gemm_w4a8_wgmma(const ExpertGemmW4A8& gemm,
                                WgmmaSchedule schedule = WgmmaSchedule::kLockstep);

// Any of the kernels from host vectors (a is experts x m x k), for the checks.
enum class W4a8Kernel { kMmaSync, kWgmma, kWgmmaWarpSpecialized };
std::vector<float> expert_gemm_w4a8_cuda(const std::vector<uint8_t>& a, float a_scale, int64_t m,
                                         const std::vector<ExpertWeights>& experts,
                                         W4a8Kernel kernel = W4a8Kernel::kMmaSync);

// BF16 activations x the same MXFP4 weights (W4A16), as Marlin's MoE kernels
// run V4's FP4 experts on Hopper (SGLang's and vLLM's path there; the step
// model's EngineChoices::experts_bf16_math): the weights widened to BF16 in
// registers, their group scale multiplied in, on mma.sync BF16 tensor cores.
// A rank's experts in one launch, m rows each; n a multiple of 64, k of 128.
struct ExpertGemmW4A16 {
  const uint16_t* activations;    // experts x m x k, BF16 bits
  const uint8_t* packed_weights;  // experts x n x k/2, e2m1, low nibble first
  const uint8_t* weight_scales;   // experts x n x k/32, e8m0
  float* out;                     // experts x m x n
  int64_t experts, m, n, k;
};
void run_expert_gemm_w4a16(const ExpertGemmW4A16& gemm);  // launches on the default stream
std::vector<float> expert_gemm_w4a16_cuda(const std::vector<uint16_t>& a, int64_t m,
                                          const std::vector<ExpertWeights>& experts);
// Its reference: a is experts x m x k BF16 bits, the result the experts'
// outputs one after another.
std::vector<float> experts_gemm_w4a16_reference(const std::vector<uint16_t>& a, int64_t m,
                                                const std::vector<ExpertWeights>& experts);

// Device weights widened to FP8 E4M3 in memory: out (rows x k) = value /
// 2^scale_exponent, exact while every group scale lies within 2^8 below
// 2^scale_exponent (pass the largest). Launches on the default stream.
void widen_expert_weights_to_fp8(const uint8_t* packed, const uint8_t* scales, uint8_t* out, int64_t rows,
                                 int64_t k, int scale_exponent);

// CUDA + cuBLASLt; m, n, k multiples of 16.
std::vector<float> expert_gemm_cuda(const std::vector<uint8_t>& a, float a_scale, int64_t m,
                                    const ExpertWeights& w);

// A group of experts of one shape, m rows each (uniform routing), in one
// batched cuBLASLt launch: a is G x m x k, the result G x m x n. One tensor
// scale serves every expert (the largest group scale of all of them), so the
// widening stays exact while all group scales lie within 2^8 of it.
std::vector<float> expert_gemm_grouped_cuda(const std::vector<uint8_t>& a, float a_scale, int64_t m,
                                            const std::vector<ExpertWeights>& experts);

// d (m x n) = a (m x k) x w^T (n x k) with BF16 operands given as raw bits, on
// cuBLASLt: the path of the BF16 projections (router, indexer head weights, LM head).
std::vector<float> bf16_gemm_cuda(const std::vector<uint16_t>& a, const std::vector<uint16_t>& w, int64_t m,
                                  int64_t n, int64_t k);

// A planned cuBLASLt GEMM on device buffers ("TN": both operands K-major):
// d (m x n, f32) = (a x a_scale) (m x k) x (w x w_scale)^T (n x k), `groups`
// times over consecutive (strided) w, a and d blocks in one launch. FP8 E4M3
// operands take per-tensor scales (device pointers); BF16 ones take none.
enum class GemmOperands { kFp8E4M3, kBf16 };

class GemmPlan {
 public:
  GemmPlan(GemmOperands operands, const void* w, const void* a, float* d, const float* w_scale,
           const float* a_scale, int64_t m, int64_t n, int64_t k, int64_t groups = 1);
  ~GemmPlan();
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;
  void run() const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace v41sim::kernels
