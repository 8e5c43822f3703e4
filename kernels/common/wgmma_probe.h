// What the device's warpgroup MMA reads, against our model of it
// (wgmma_layout.h), one instruction at a time: the layouts our four wgmma
// kernels rest on, probed alone, so a first run on a Hopper GPU says which
// one the hardware reads otherwise, and how, where a kernel's check would
// only say that its outputs are wrong. Plain C++ (the kernels are sm_90a's).
#pragma once

#include <string>

namespace v41sim::kernels {

struct WgmmaLayoutProbe {
  bool fp8_k_major = false;      // m64n128k32 E4M3, both K-major (expert GEMM, prefill indexer)
  bool fp8_k_major_n32 = false;  // m64n32k32 E4M3, both K-major (decode indexer)
  bool bf16_k_major = false;     // m64n64k16 BF16, both K-major (sparse decode's scores)
  bool bf16_mn_major = false;    // m64n256k16 BF16, A from registers, B N-major (its P.V)
  std::string detail;            // what differs, and which other reading matches where one does
  bool ok() const { return fp8_k_major && fp8_k_major_n32 && bf16_k_major && bf16_mn_major; }
};

// Runs each probe on small integers (every product and sum exact in FP32)
// against the plain matrix product. Throws where the device is not an sm_90 one.
WgmmaLayoutProbe probe_wgmma_layouts();

}  // namespace v41sim::kernels
