// What every measurement group of the harness shares: the device it runs
// on, the metadata it writes, timing repetitions, buffer rotation against
// L2, and the rule that a kernel failing its check is not timed.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "kernels/attention/sparse_decode_types.h"
#include "kernels/checks/device_checks.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/harness/csv_rows.h"

#ifndef V41SIM_GIT_COMMIT
#define V41SIM_GIT_COMMIT "unknown"
#endif

namespace v41sim::kernels {

inline constexpr int kWarmup = 5;
inline constexpr int kRuns = 50;
inline constexpr int64_t kDim = kLatentDim;  // V4.1 compressed KV latent

struct Device {
  cudaDeviceProp props{};
  int sms = 0;
  int clock_khz = 0;
  int memory_clock_khz = 0;
  int l2_bytes = 0;
  int driver = 0;
  int runtime = 0;
};

inline Device query_device() {
  Device d;
  CUDA_CHECK(cudaGetDeviceProperties(&d.props, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.clock_khz, cudaDevAttrClockRate, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.memory_clock_khz, cudaDevAttrMemoryClockRate, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.l2_bytes, cudaDevAttrL2CacheSize, 0));
  CUDA_CHECK(cudaDriverGetVersion(&d.driver));
  CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime));
  return d;
}

inline std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

inline void write_metadata(const RowWriter& w, const Device& d) {
  w.meta("gpu", d.props.name);
  w.meta("sm_count", std::to_string(d.sms));
  w.meta("sm_clock_mhz", std::to_string(d.clock_khz / 1000));
  w.meta("memory_clock_mhz", std::to_string(d.memory_clock_khz / 1000));
  w.meta("memory_bytes", std::to_string(d.props.totalGlobalMem));
  w.meta("memory_bus_bits", std::to_string(d.props.memoryBusWidth));
  w.meta("l2_bytes", std::to_string(d.l2_bytes));
  w.meta("driver", std::to_string(d.driver));
  w.meta("cuda", std::to_string(d.runtime));
  w.meta("date", utc_now());
  w.meta("git_commit", V41SIM_GIT_COMMIT);
}

// Enough copies of a working set that rotating through them defeats L2.
inline int rotation_for(int64_t bytes, const Device& d) {
  const int64_t needed = 4LL * d.l2_bytes / std::max<int64_t>(bytes, 1) + 1;
  return static_cast<int>(std::min<int64_t>(needed, 64));
}

template <typename T>
std::vector<DeviceBuffer<T>> rotated(int copies, std::size_t count) {
  std::vector<DeviceBuffer<T>> buffers;
  buffers.reserve(static_cast<std::size_t>(copies));
  for (int i = 0; i < copies; ++i) buffers.emplace_back(count);
  return buffers;
}

template <typename T>
T* pick(const std::vector<DeviceBuffer<T>>& buffers, int run) {
  return buffers[static_cast<std::size_t>(run) % buffers.size()].get();
}

inline bool passes(const char* what, const CheckResult& check) {
  if (check.ok) return true;
  std::fprintf(stderr, "%s: %s; not timed\n", what, check.detail.c_str());
  return false;
}

// Runs one shape's measurement. A library's refusal (cuBLASLt has no
// algorithm for a shape) skips that shape, said on stderr, instead of ending
// the whole group.
template <typename Measure>
void measure_shape(const std::string& what, Measure&& measure) {
  try {
    measure();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s; shape skipped\n", what.c_str(), e.what());
  }
}

}  // namespace v41sim::kernels
