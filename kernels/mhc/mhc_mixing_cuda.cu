// mHC mixing kernels. The three-kernel form reads the streams three times
// (coefficients, pre-mix, post-merge); the single pass reads them once,
// keeps the merged streams in registers for the next block's coefficients
// and input, and writes each result once: about half the traffic.
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/mhc/mhc_mixing.h"

namespace v41sim::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxPerThread = 32;  // hidden <= 8192 for the single pass (a multiple of 4)

// Sums of the 4 streams over the block; every thread gets them.
__device__ void block_stream_sums(float (&local)[kStreams], float (&total)[kStreams]) {
  __shared__ float partial[kThreads / 32][kStreams];
  for (int s = 0; s < kStreams; ++s) {
    float v = local[s];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32][s] = v;
  }
  __syncthreads();
  for (int s = 0; s < kStreams; ++s) {
    float sum = 0;
    for (int w = 0; w < kThreads / 32; ++w) sum += partial[w][s];
    total[s] = sum;
  }
  __syncthreads();
}

__global__ void coefficients_kernel(const float* __restrict__ X, float* __restrict__ coeffs, int64_t hidden) {
  const int64_t t = blockIdx.x;
  float local[kStreams] = {0, 0, 0, 0};
  for (int64_t i = threadIdx.x; i < hidden; i += kThreads) {
    for (int s = 0; s < kStreams; ++s) local[s] += X[(t * kStreams + s) * hidden + i];
  }
  float total[kStreams];
  block_stream_sums(local, total);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStreams; ++s) total[s] /= static_cast<float>(hidden);
    mhc_coefficients(total, coeffs + t * kCoefficients);
  }
}

__global__ void pre_mix_kernel(const float* __restrict__ X, const float* __restrict__ coeffs,
                               float* __restrict__ x_in, int64_t tokens, int64_t hidden) {
  const int64_t flat = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (flat >= tokens * hidden) return;
  const int64_t t = flat / hidden;
  const int64_t i = flat % hidden;
  float acc = 0;
  for (int s = 0; s < kStreams; ++s)
    acc += coeffs[t * kCoefficients + s] * X[(t * kStreams + s) * hidden + i];
  x_in[flat] = acc;
}

__global__ void post_merge_kernel(const float* __restrict__ X, const float* __restrict__ y,
                                  const float* __restrict__ coeffs, float* __restrict__ X_out, int64_t tokens,
                                  int64_t hidden) {
  const int64_t flat = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (flat >= tokens * hidden) return;
  const int64_t t = flat / hidden;
  const int64_t i = flat % hidden;
  const float* B = coeffs + t * kCoefficients + kStreams;
  const float* b = B + kStreams * kStreams;
  float x[kStreams];
  for (int u = 0; u < kStreams; ++u) x[u] = X[(t * kStreams + u) * hidden + i];
  for (int s = 0; s < kStreams; ++s) {
    float acc = b[s] * y[flat];
    for (int u = 0; u < kStreams; ++u) acc += B[s * kStreams + u] * x[u];
    X_out[(t * kStreams + s) * hidden + i] = acc;
  }
}

// The merged streams stay in registers between the two halves, so the
// element loops are unrolled over a compile-time count per thread: with a
// runtime count, ptxas keeps them in a local-memory array (a 512-byte stack
// frame per thread) whose traffic would eat the saving being measured.
template <int kPerThread>
__global__ void __launch_bounds__(kThreads)
    fused_kernel(const float* __restrict__ X, const float* __restrict__ y, const float* __restrict__ coeffs,
                 float* __restrict__ X_out, float* __restrict__ next_input, float* __restrict__ next_coeffs,
                 int64_t hidden) {
  const int64_t t = blockIdx.x;
  __shared__ float c[kCoefficients];
  __shared__ float next[kCoefficients];
  if (threadIdx.x < kCoefficients) c[threadIdx.x] = coeffs[t * kCoefficients + threadIdx.x];
  __syncthreads();
  const float* B = c + kStreams;
  const float* b = B + kStreams * kStreams;
  float merged[kPerThread][kStreams];
  float local[kStreams] = {0, 0, 0, 0};
#pragma unroll
  for (int n = 0; n < kPerThread; ++n) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(n) * kThreads;
    if (i >= hidden) break;
    float x[kStreams];
#pragma unroll
    for (int u = 0; u < kStreams; ++u) x[u] = X[(t * kStreams + u) * hidden + i];
    const float yi = y[t * hidden + i];
#pragma unroll
    for (int s = 0; s < kStreams; ++s) {
      float acc = b[s] * yi;
#pragma unroll
      for (int u = 0; u < kStreams; ++u) acc += B[s * kStreams + u] * x[u];
      merged[n][s] = acc;
      X_out[(t * kStreams + s) * hidden + i] = acc;
      local[s] += acc;
    }
  }
  float total[kStreams];
  block_stream_sums(local, total);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStreams; ++s) total[s] /= static_cast<float>(hidden);
    mhc_coefficients(total, next);
    for (int k = 0; k < kCoefficients; ++k) next_coeffs[t * kCoefficients + k] = next[k];
  }
  __syncthreads();
#pragma unroll
  for (int n = 0; n < kPerThread; ++n) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(n) * kThreads;
    if (i >= hidden) break;
    float acc = 0;
#pragma unroll
    for (int s = 0; s < kStreams; ++s) acc += next[s] * merged[n][s];
    next_input[t * hidden + i] = acc;
  }
}

// The single pass for up to kPerThread elements per thread, or the next
// wider instantiation (steps of 4 elements: hidden up to 1024 per step).
template <int kPerThread>
void launch_fused_for(int64_t per_thread, const float* X, const float* y, const float* coeffs, float* X_out,
                      float* next_input, float* next_coeffs, int64_t tokens, int64_t hidden) {
  if constexpr (kPerThread < kMaxPerThread) {
    if (per_thread > kPerThread) {
      launch_fused_for<kPerThread + 4>(per_thread, X, y, coeffs, X_out, next_input, next_coeffs, tokens,
                                       hidden);
      return;
    }
  }
  fused_kernel<kPerThread>
      <<<static_cast<unsigned>(tokens), kThreads>>>(X, y, coeffs, X_out, next_input, next_coeffs, hidden);
}

unsigned elementwise_blocks(int64_t tokens, int64_t hidden) {
  return static_cast<unsigned>((tokens * hidden + kThreads - 1) / kThreads);
}

}  // namespace

void launch_mhc_coefficients(const float* X, float* coeffs, int64_t tokens, int64_t hidden) {
  coefficients_kernel<<<static_cast<unsigned>(tokens), kThreads>>>(X, coeffs, hidden);
}

void launch_mhc_pre_mix(const float* X, const float* coeffs, float* x_in, int64_t tokens, int64_t hidden) {
  pre_mix_kernel<<<elementwise_blocks(tokens, hidden), kThreads>>>(X, coeffs, x_in, tokens, hidden);
}

void launch_mhc_post_merge(const float* X, const float* y, const float* coeffs, float* X_out, int64_t tokens,
                           int64_t hidden) {
  post_merge_kernel<<<elementwise_blocks(tokens, hidden), kThreads>>>(X, y, coeffs, X_out, tokens, hidden);
}

void launch_mhc_fused(const float* X, const float* y, const float* coeffs, float* X_out, float* next_input,
                      float* next_coeffs, int64_t tokens, int64_t hidden) {
  if (hidden > static_cast<int64_t>(kThreads) * kMaxPerThread)
    throw std::invalid_argument("mhc fused: hidden > 8192");
  const int64_t per_thread = (hidden + kThreads - 1) / kThreads;
  launch_fused_for<4>(per_thread, X, y, coeffs, X_out, next_input, next_coeffs, tokens, hidden);
}

MhcFusedResult mhc_fused_cuda(const std::vector<float>& X, const std::vector<float>& y,
                              const std::vector<float>& coeffs, int64_t tokens, int64_t hidden) {
  const DeviceBuffer<float> dX(X), dy(y), dc(coeffs);
  const DeviceBuffer<float> dXo(X.size()), dnext(y.size()), dnc(coeffs.size());
  launch_mhc_fused(dX.get(), dy.get(), dc.get(), dXo.get(), dnext.get(), dnc.get(), tokens, hidden);
  CUDA_CHECK(cudaGetLastError());
  return {dXo.download(X.size()), dnext.download(y.size()), dnc.download(coeffs.size())};
}

}  // namespace v41sim::kernels
