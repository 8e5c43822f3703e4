// Engram lookup: gather hashed n-gram rows (256 FP8 values + scale = 264 B)
// from a table in pinned host memory into a dense device buffer, the way
// V4.1 prefetches them over PCIe / C2C. The CPU reference is a plain gather.
#pragma once

#include <cstdint>
#include <vector>

namespace v41sim::kernels {

inline constexpr int kEngramRowBytes = 264;

std::vector<uint8_t> engram_gather_reference(const std::vector<uint8_t>& table,
                                             const std::vector<int64_t>& rows);

// CUDA: `table` is read in place through a mapped pinned allocation (zero-copy).
std::vector<uint8_t> engram_gather_cuda(const std::vector<uint8_t>& table, const std::vector<int64_t>& rows);
// Harness launcher: `host_table` is a device pointer to mapped pinned memory.
void launch_engram_gather(const uint8_t* host_table, const int64_t* rows, uint8_t* out, int64_t count);

}  // namespace v41sim::kernels
