// Expert GEMM on cuBLASLt's FP8 path (and the plain BF16 GEMM of the dense projections that run in BF16). The
// FP4 weights are first widened to FP8 e4m3 with one power-of-two tensor scale (exact while every group scale
// lies within 2^8 of the largest), then D = A x W^T runs as cuBLASLt's "TN"
// FP8 GEMM with FP32 accumulation and FP32 output.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/fp_codec.h"
#include "kernels/gemm/expert_gemm.h"

#define CUBLASLT_CHECK(call)                                                       \
  do {                                                                             \
    const cublasStatus_t cublaslt_status = (call);                                 \
    if (cublaslt_status != CUBLAS_STATUS_SUCCESS) {                                \
      throw std::runtime_error(std::string(#call) + ": cuBLASLt status " +         \
                               std::to_string(static_cast<int>(cublaslt_status))); \
    }                                                                              \
  } while (0)

namespace v41sim::kernels {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kWorkspaceBytes = 32u << 20;

// Widen MXFP4 to FP8 e4m3 codes, dividing by 2^shift (the tensor scale).
__global__ void widen_fp4_to_fp8_kernel(const uint8_t* __restrict__ packed,
                                        const uint8_t* __restrict__ scales, uint8_t* __restrict__ out,
                                        int64_t n, int64_t k, int shift) {
  const int64_t flat = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (flat >= n * k) return;
  const int64_t row = flat / k;
  const int64_t col = flat % k;
  const uint8_t byte = packed[flat / 2];
  const float value =
      decode_e2m1((col & 1) ? (byte >> 4) : (byte & 0xF)) *
      ldexpf(1.0f,
             static_cast<int>(scales[row * (k / kWeightScaleGroup) + col / kWeightScaleGroup]) - 127 - shift);
  out[flat] = encode_e4m3(value);
}

}  // namespace

void widen_expert_weights_to_fp8(const uint8_t* packed, const uint8_t* scales, uint8_t* out, int64_t rows,
                                 int64_t k, int scale_exponent) {
  widen_fp4_to_fp8_kernel<<<static_cast<unsigned>((rows * k + kThreads - 1) / kThreads), kThreads>>>(
      packed, scales, out, rows, k, scale_exponent);
  CUDA_CHECK(cudaGetLastError());
}

struct GemmPlan::Impl {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layout_w = nullptr, layout_a = nullptr, layout_d = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic{};
  void* workspace = nullptr;
  const void* w;
  const void* a;
  float* d;
};

GemmPlan::GemmPlan(GemmOperands operands, const void* w, const void* a, float* d, const float* w_scale,
                   const float* a_scale, int64_t m, int64_t n, int64_t k, int64_t groups)
    : impl_(new Impl{}) {
  if (m % 16 != 0 || n % 16 != 0 || k % 16 != 0 || groups <= 0)
    throw std::invalid_argument("gemm: m, n, k must be multiples of 16 and groups positive");
  const bool fp8 = operands == GemmOperands::kFp8E4M3;
  const cudaDataType_t operand_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  Impl& p = *impl_;
  p.w = w;
  p.a = a;
  p.d = d;
  CUDA_CHECK(cudaMalloc(&p.workspace, kWorkspaceBytes));
  CUBLASLT_CHECK(cublasLtCreate(&p.handle));
  CUBLASLT_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  CUBLASLT_CHECK(
      cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof transpose));
  CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof keep));
  // cuBLASLt's A is the weights (k x n column-major, transposed: "TN"), its B the activations (k x m).
  if (fp8) {
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale,
                                                  sizeof w_scale));
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &a_scale,
                                                  sizeof a_scale));
  }
  CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p.layout_w, operand_type, static_cast<uint64_t>(k),
                                            static_cast<uint64_t>(n), k));
  CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p.layout_a, operand_type, static_cast<uint64_t>(k),
                                            static_cast<uint64_t>(m), k));
  CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p.layout_d, CUDA_R_32F, static_cast<uint64_t>(n),
                                            static_cast<uint64_t>(m), n));
  if (groups > 1) {  // strided batch: group g's matrices follow group g-1's
    const auto count = static_cast<int32_t>(groups);
    const std::pair<cublasLtMatrixLayout_t, int64_t> strides[] = {
        {p.layout_w, n * k}, {p.layout_a, m * k}, {p.layout_d, m * n}};
    for (const auto& [layout, stride] : strides) {
      CUBLASLT_CHECK(
          cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
      CUBLASLT_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                      &stride, sizeof stride));
    }
  }
  cublasLtMatmulPreference_t preference;
  CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &kWorkspaceBytes, sizeof kWorkspaceBytes));
  int found = 0;
  CUBLASLT_CHECK(cublasLtMatmulAlgoGetHeuristic(p.handle, p.desc, p.layout_w, p.layout_a, p.layout_d,
                                                p.layout_d, preference, 1, &p.heuristic, &found));
  cublasLtMatmulPreferenceDestroy(preference);
  if (found == 0) throw std::runtime_error("gemm: cuBLASLt has no algorithm for these operands and shape");
}

GemmPlan::~GemmPlan() {
  cublasLtMatrixLayoutDestroy(impl_->layout_w);
  cublasLtMatrixLayoutDestroy(impl_->layout_a);
  cublasLtMatrixLayoutDestroy(impl_->layout_d);
  cublasLtMatmulDescDestroy(impl_->desc);
  cublasLtDestroy(impl_->handle);
  cudaFree(impl_->workspace);
  delete impl_;
}

void GemmPlan::run() const {
  const Impl& p = *impl_;
  const float alpha = 1.0f, beta = 0.0f;
  CUBLASLT_CHECK(cublasLtMatmul(p.handle, p.desc, &alpha, p.w, p.layout_w, p.a, p.layout_a, &beta, p.d,
                                p.layout_d, p.d, p.layout_d, &p.heuristic.algo, p.workspace, kWorkspaceBytes,
                                nullptr));
}

std::vector<float> expert_gemm_cuda(const std::vector<uint8_t>& a, float a_scale, int64_t m,
                                    const ExpertWeights& w) {
  return expert_gemm_grouped_cuda(a, a_scale, m, {w});
}

std::vector<float> expert_gemm_grouped_cuda(const std::vector<uint8_t>& a, float a_scale, int64_t m,
                                            const std::vector<ExpertWeights>& experts) {
  if (experts.empty()) throw std::invalid_argument("expert gemm: no experts");
  const int64_t n = experts.front().n, k = experts.front().k;
  const auto groups = static_cast<int64_t>(experts.size());
  if (m % 16 != 0 || n % 16 != 0 || k % 16 != 0)
    throw std::invalid_argument("expert gemm: m, n, k must be multiples of 16");
  // Tensor scale: the largest group scale, so widened values stay <= 6 (within e4m3's 448).
  int max_exponent = -127;
  for (const ExpertWeights& w : experts) {
    if (w.n != n || w.k != k) throw std::invalid_argument("expert gemm: a group's experts share one shape");
    max_exponent =
        std::max(max_exponent, static_cast<int>(*std::max_element(w.scales.begin(), w.scales.end())) - 127);
  }
  const DeviceBuffer<uint8_t> d_a(a);
  const DeviceBuffer<float> d_a_scale(std::vector<float>{a_scale});
  const DeviceBuffer<float> d_w_scale(std::vector<float>{std::ldexp(1.0f, max_exponent)});
  const DeviceBuffer<uint8_t> d_w8(static_cast<std::size_t>(groups * n * k));
  const DeviceBuffer<float> d_d(static_cast<std::size_t>(groups * m * n));
  for (int64_t g = 0; g < groups; ++g) {
    const ExpertWeights& w = experts[static_cast<std::size_t>(g)];
    const DeviceBuffer<uint8_t> d_packed(w.packed), d_scales(w.scales);
    widen_expert_weights_to_fp8(d_packed.get(), d_scales.get(), d_w8.get() + g * n * k, n, k, max_exponent);
    CUDA_CHECK(cudaDeviceSynchronize());  // before d_packed and d_scales go
  }
  {
    const GemmPlan plan(GemmOperands::kFp8E4M3, d_w8.get(), d_a.get(), d_d.get(), d_w_scale.get(),
                        d_a_scale.get(), m, n, k, groups);
    plan.run();
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  return d_d.download(static_cast<std::size_t>(groups * m * n));
}

std::vector<float> bf16_gemm_cuda(const std::vector<uint16_t>& a, const std::vector<uint16_t>& w, int64_t m,
                                  int64_t n, int64_t k) {
  const DeviceBuffer<uint16_t> d_a(a), d_w(w);
  const DeviceBuffer<float> d_d(static_cast<std::size_t>(m * n));
  {
    const GemmPlan plan(GemmOperands::kBf16, d_w.get(), d_a.get(), d_d.get(), nullptr, nullptr, m, n, k);
    plan.run();
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  return d_d.download(static_cast<std::size_t>(m * n));
}

}  // namespace v41sim::kernels
