// Probes of the device's wgmma reads (wgmma_probe.h): each kernel places a
// small matrix pair in shared memory as our model says the instruction
// reads it (wgmma_layout.h), runs one warpgroup's steps and writes the
// accumulators out by the model's owners; the host compares with the plain
// product. Where the N-major probe differs, it is run again with the two
// reading's alternatives a fault is likeliest in (the descriptor's leading
// and stride offsets swapped; the A fragment's registers in the other
// order), and the detail says which of them matches.
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/common/cp_async.cuh"
#include "kernels/common/cuda_check.h"
#include "kernels/common/cuda_device.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/dynamic_shared_memory.cuh"
#include "kernels/common/fp_codec.h"
#include "kernels/common/wgmma.cuh"
#include "kernels/common/wgmma_probe.h"

namespace v41sim::kernels {
namespace {

constexpr int kK64 = wgmma::kRowBytes / 2;  // BF16 values a swizzled row
constexpr int kN256 = 4 * kK64;             // the N-major probe's N: four 64-column blocks
// Those blocks' stride: 64 rows of a swizzled operand, as the sparse decode keeps its key tile.
constexpr int kBlock = wgmma::kM * wgmma::kRowBytes;
constexpr int kSmem = 4 * kBlock + wgmma::kAtomBytes;
constexpr int kBf16K = wgmma::kK16Bit;
constexpr int kMnAccumulators = wgmma::kM * kN256 / wgmma::kThreads;  // a thread's, m64n256

// d = a x b^T over 64 (BF16) or 128 (FP8) bytes of K, a 64 rows and b kN
// rows (m64n128k32 or m64n32k32 FP8, m64n64k16 BF16), both K-major, stepped
// 32 bytes at a time as the kernels step.
template <bool kFp8, int kN>
__global__ void __launch_bounds__(wgmma::kThreads)
    probe_k_major(const uint8_t* a, const uint8_t* b, float* d) {
  static_assert(kFp8 || kN == 64, "BF16's step is m64n64k16");
  extern __shared__ uint8_t dynamic_smem[];
  uint8_t* smem = wgmma::atom_aligned(dynamic_smem);
  uint8_t* a_s = smem;
  uint8_t* b_s = smem + wgmma::kM * wgmma::kRowBytes;
  const int t = static_cast<int>(threadIdx.x);
  for (int i = t; i < (wgmma::kM + kN) * wgmma::kRowBytes; i += wgmma::kThreads) {
    const int row = i / wgmma::kRowBytes, byte = i % wgmma::kRowBytes;
    if (row < wgmma::kM) {
      a_s[wgmma::swizzled_offset(row, byte)] = a[i];
    } else {
      b_s[wgmma::swizzled_offset(row - wgmma::kM, byte)] = b[i - wgmma::kM * wgmma::kRowBytes];
    }
  }
  wgmma::fence_shared_for_async_proxy();
  __syncthreads();
  constexpr int kValues = kN / 2;  // accumulators a thread
  float acc[kValues];
  wgmma::fence();
#pragma unroll
  for (int step = 0; step < wgmma::kRowBytes / wgmma::kK; ++step) {
    const uint64_t da = wgmma::descriptor(shared_address(a_s + step * wgmma::kK));
    const uint64_t db = wgmma::descriptor(shared_address(b_s + step * wgmma::kK));
    if constexpr (kFp8) {
      wgmma::mma_k32_e4m3(acc, da, db, step > 0);
    } else {
      wgmma::mma_m64n64k16_bf16(acc, da, db, step > 0);
    }
  }
  wgmma::commit_group();
  wgmma::wait_group<0>();
#pragma unroll
  for (int i = 0; i < kValues; ++i)
    d[wgmma::accumulator_row(t, i) * kN + wgmma::accumulator_col(t, i)] = acc[i];
}

// d (64 x 256) = a (64 x 16, BF16, from registers) x b (16 x 256, BF16,
// N-major in 64-column blocks kBlock apart). `swap_offsets`: the descriptor's
// leading and stride offsets exchanged; `swap_registers`: A's registers 1
// and 2 exchanged (k's half before the row's).
__global__ void __launch_bounds__(wgmma::kThreads)
    probe_mn_major(const uint16_t* a, const uint16_t* b, float* d, bool swap_offsets, bool swap_registers) {
  extern __shared__ uint8_t dynamic_smem[];
  uint8_t* smem = wgmma::atom_aligned(dynamic_smem);
  const int t = static_cast<int>(threadIdx.x);
  for (int i = t; i < kBf16K * kN256; i += wgmma::kThreads) {
    const int k = i / kN256, n = i % kN256;
    *reinterpret_cast<uint16_t*>(smem + (n / kK64) * kBlock + wgmma::swizzled_offset(k, (n % kK64) * 2)) =
        b[i];
  }
  wgmma::fence_shared_for_async_proxy();
  __syncthreads();
  uint32_t fragment[4];
#pragma unroll
  for (int reg = 0; reg < 4; ++reg) {
    const int r = swap_registers ? (reg == 1 ? 2 : reg == 2 ? 1 : reg) : reg;
    const int row = wgmma::a_fragment_row(t, r), k = wgmma::a_fragment_k(t, r, 0);
    fragment[reg] =
        static_cast<uint32_t>(a[row * kBf16K + k]) | (static_cast<uint32_t>(a[row * kBf16K + k + 1]) << 16);
  }
  const uint64_t desc = swap_offsets ? wgmma::descriptor(shared_address(smem), wgmma::kAtomBytes, kBlock)
                                     : wgmma::descriptor(shared_address(smem), kBlock, wgmma::kAtomBytes);
  float acc[kMnAccumulators];
#pragma unroll
  for (int i = 0; i < kMnAccumulators; ++i) acc[i] = 0.0f;
  wgmma::fence();
  wgmma::mma_m64n256k16_bf16_rs(acc, fragment, desc);
  wgmma::commit_group();
  wgmma::wait_group<0>();
#pragma unroll
  for (int i = 0; i < kMnAccumulators; ++i)
    d[wgmma::accumulator_row(t, i) * kN256 + wgmma::accumulator_col(t, i)] = acc[i];
}

// Small integers, -3 to 3, by a pattern that differs along both dimensions.
float probe_value(int row, int col, int salt) {
  return static_cast<float>((row * 7 + col * 3 + salt) % 7 - 3);
}

// How many of d's m x n outputs differ from the product of a (m x k) and b (k x n, or n x k when
// b_rows_are_n).
int wrong_outputs(const std::vector<float>& d, const std::vector<float>& a, const std::vector<float>& b,
                  int m, int n, int k, bool b_rows_are_n) {
  int wrong = 0;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float want = 0;
      for (int x = 0; x < k; ++x) want += a[i * k + x] * (b_rows_are_n ? b[j * k + x] : b[x * n + j]);
      wrong += d[i * n + j] != want;
    }
  }
  return wrong;
}

// A probe's outcome: how many of its outputs are off.
struct Wrong {
  int outputs, of;
  std::string said(const char* what) const {
    return std::string(what) + ": " + std::to_string(outputs) + " of " + std::to_string(of) +
           " outputs wrong";
  }
};

template <bool kFp8, int n>
Wrong probe_k_major_wrong() {
  constexpr int kM = wgmma::kM, kRow = wgmma::kRowBytes;
  const int k = kFp8 ? kRow : kRow / 2;
  std::vector<float> a(kM * k), b(n * k);
  std::vector<uint8_t> a_bytes(kM * kRow), b_bytes(n * kRow);
  for (int r = 0; r < kM + n; ++r) {
    for (int x = 0; x < k; ++x) {
      const float v = probe_value(r, x, kFp8 ? 1 : 2);
      std::vector<uint8_t>& bytes = r < kM ? a_bytes : b_bytes;
      const int row = r < kM ? r : r - kM;
      (r < kM ? a : b)[row * k + x] = v;
      if constexpr (kFp8) {
        bytes[row * kRow + x] = encode_e4m3(v);
      } else {
        const uint16_t bits = bf16_bits(v);
        bytes[row * kRow + 2 * x] = static_cast<uint8_t>(bits);
        bytes[row * kRow + 2 * x + 1] = static_cast<uint8_t>(bits >> 8);
      }
    }
  }
  const DeviceBuffer<uint8_t> da(a_bytes), db(b_bytes);
  const DeviceBuffer<float> dd(static_cast<std::size_t>(kM * n));
  allow_shared_memory<probe_k_major<kFp8, n>>(kSmem);
  probe_k_major<kFp8, n><<<1, wgmma::kThreads, kSmem>>>(da.get(), db.get(), dd.get());
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  return {wrong_outputs(dd.download(static_cast<std::size_t>(kM * n)), a, b, kM, n, k, true), kM * n};
}

Wrong probe_mn_major_wrong(bool swap_offsets, bool swap_registers) {
  constexpr int kM = wgmma::kM, kK = kBf16K;  // m64n256k16
  std::vector<float> a(kM * kK), b(kK * kN256);
  std::vector<uint16_t> a_bits(a.size()), b_bits(b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    a_bits[i] = bf16_bits(a[i] = probe_value(int(i) / kK, int(i) % kK, 3));
  for (std::size_t i = 0; i < b.size(); ++i)
    b_bits[i] = bf16_bits(b[i] = probe_value(int(i) / kN256, int(i) % kN256, 4));
  const DeviceBuffer<uint16_t> da(a_bits), db(b_bits);
  const DeviceBuffer<float> dd(static_cast<std::size_t>(kM * kN256));
  allow_shared_memory<probe_mn_major>(kSmem);
  probe_mn_major<<<1, wgmma::kThreads, kSmem>>>(da.get(), db.get(), dd.get(), swap_offsets, swap_registers);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  return {wrong_outputs(dd.download(static_cast<std::size_t>(kM * kN256)), a, b, kM, kN256, kK, false),
          kM * kN256};
}

}  // namespace

WgmmaLayoutProbe probe_wgmma_layouts() {
  std::string why;
  if (!sm90a_device(&why)) throw std::runtime_error("wgmma layout probe: " + why);
  WgmmaLayoutProbe p;
  const Wrong fp8 = probe_k_major_wrong<true, 2 * wgmma::kM>(),
              bf16 = probe_k_major_wrong<false, wgmma::kM>();
  const Wrong fp8_n32 = probe_k_major_wrong<true, 32>();
  const Wrong mn = probe_mn_major_wrong(false, false);
  p.fp8_k_major = fp8.outputs == 0;
  p.fp8_k_major_n32 = fp8_n32.outputs == 0;
  p.bf16_k_major = bf16.outputs == 0;
  p.bf16_mn_major = mn.outputs == 0;
  if (!p.fp8_k_major) p.detail += fp8.said("FP8 K-major") + "; ";
  if (!p.fp8_k_major_n32) p.detail += fp8_n32.said("FP8 K-major, m64n32k32") + "; ";
  if (!p.bf16_k_major) p.detail += bf16.said("BF16 K-major") + "; ";
  if (!p.bf16_mn_major) {
    p.detail += mn.said("BF16 N-major with A from registers");
    for (const auto& [offsets, registers, what] :
         {std::tuple{true, false, "the descriptor's leading and stride offsets swapped"},
          std::tuple{false, true, "A's registers 1 and 2 swapped"}, std::tuple{true, true, "both swapped"}}) {
      if (probe_mn_major_wrong(offsets, registers).outputs == 0)
        p.detail += std::string("; right with ") + what;
    }
  }
  return p;
}

}  // namespace v41sim::kernels
