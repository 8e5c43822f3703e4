// GpuProfile: one GPU as a serving system sees it (per GPU figures, plus the
// node and scale-up domain it sits in). Every field is a SourcedValue read
// from hw_profiles/*.yaml; the sources are in shared/reference/hardware.md.
#pragma once

#include <cstdint>
#include <string>

#include "sim/common/sourced_value.h"

namespace v41sim {

struct TensorRates {
  SourcedValue fp4_tflops;  // dense (no 2:4 sparsity)
  SourcedValue fp8_tflops;
  SourcedValue bf16_tflops;
};

struct GpuProfile {
  std::string name;
  std::string file;
  std::string architecture;  // hopper | blackwell: calibrations transfer within one
  SourcedValue sm_count;
  SourcedValue hbm_bytes;
  SourcedValue hbm_bytes_per_s;
  SourcedValue l2_bytes;
  TensorRates tensor;
  SourcedValue fp32_vector_tflops;
  SourcedValue nvlink_bytes_per_s;     // per GPU, one direction
  SourcedValue nvlink_domain_gpus;     // GPUs in one NVLink domain
  SourcedValue nic_bytes_per_s;        // scale-out, per GPU, one direction
  SourcedValue host_link_bytes_per_s;  // PCIe / C2C, one direction
  SourcedValue host_dram_bytes_per_node;
  SourcedValue gpus_per_node;
  SourcedValue power_watts;
  SourcedValue price_usd_per_gpu_hour;

  // GPUs reachable over NVLink without leaving the domain (EP ranks per domain).
  int64_t nvlink_domain() const { return static_cast<int64_t>(nvlink_domain_gpus.value()); }
};

}  // namespace v41sim
