// Engram gather over the host link: one warp per row, each lane moving 8
// bytes of the 264-byte row (33 lanes' worth: lane 0 also moves the tail),
// read straight from mapped pinned host memory so PCIe / C2C carries only the
// rows asked for.
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/engram/engram_gather.h"

namespace v41sim::kernels {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kWordsPerRow = kEngramRowBytes / 8;  // 33 eight-byte words

__global__ void engram_gather_kernel(const uint8_t* __restrict__ table, const int64_t* __restrict__ rows,
                                     uint8_t* __restrict__ out, int64_t count) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= count) return;
  const int lane = threadIdx.x % 32;
  const auto* src = reinterpret_cast<const uint64_t*>(table + rows[row] * kEngramRowBytes);
  auto* dst = reinterpret_cast<uint64_t*>(out + row * kEngramRowBytes);
  for (int w = lane; w < kWordsPerRow; w += 32) dst[w] = src[w];
}

}  // namespace

void launch_engram_gather(const uint8_t* host_table, const int64_t* rows, uint8_t* out, int64_t count) {
  if (count <= 0) throw std::invalid_argument("engram gather: no rows");
  const auto blocks = static_cast<unsigned>((count + kWarpsPerBlock - 1) / kWarpsPerBlock);
  engram_gather_kernel<<<blocks, kWarpsPerBlock * 32>>>(host_table, rows, out, count);
}

std::vector<uint8_t> engram_gather_cuda(const std::vector<uint8_t>& table, const std::vector<int64_t>& rows) {
  uint8_t* pinned = nullptr;
  CUDA_CHECK(cudaHostAlloc(&pinned, table.size(), cudaHostAllocMapped));
  std::copy(table.begin(), table.end(), pinned);
  uint8_t* mapped = nullptr;
  CUDA_CHECK(cudaHostGetDevicePointer(&mapped, pinned, 0));
  const DeviceBuffer<int64_t> d_rows(rows);
  const DeviceBuffer<uint8_t> d_out(rows.size() * kEngramRowBytes);
  launch_engram_gather(mapped, d_rows.get(), d_out.get(), static_cast<int64_t>(rows.size()));
  CUDA_CHECK(cudaGetLastError());
  std::vector<uint8_t> out = d_out.download(rows.size() * kEngramRowBytes);
  cudaFreeHost(pinned);
  return out;
}

}  // namespace v41sim::kernels
