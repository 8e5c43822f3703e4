// The harness's measurement groups: each checks its kernels, times them over
// the simulator's shapes and writes rows; each runs in its own process.
#pragma once

#include "kernels/harness/csv_rows.h"
#include "kernels/harness/harness_support.h"

namespace v41sim::kernels {

// Metadata and the device's own ceilings (copy, FP8 and BF16 GEMM, FP32 FMA).
int measure_ceilings(int fd);

int measure_mxfp4(const RowWriter& w, const Device& d, bool quick);
int measure_compress(const RowWriter& w, const Device& d, bool quick);
int measure_engram(const RowWriter& w, bool quick);
int measure_mhc(const RowWriter& w, const Device& d, bool quick);
// wgmma_passed: the FP8 wgmma logits passed their check in a process of
// their own (the driver runs it before the groups); otherwise not timed.
int measure_indexer_decode(const RowWriter& w, bool quick, bool wgmma_passed);
int measure_indexer_prefill(const RowWriter& w, bool quick, bool wgmma_passed);
int measure_sparse_decode(const RowWriter& w, const Device& dev, bool quick, bool wgmma_passed);
// Which wgmma paths passed their checks, each in a process of its own (the
// driver runs them before the groups); a path that did not is not timed.
struct WgmmaPathsPassed {
  bool lockstep = false;
  bool warp_specialized = false;
};
int measure_gemm(const RowWriter& w, bool quick, const WgmmaPathsPassed& wgmma_passed);
int measure_dense_gemm(const RowWriter& w, bool quick);

}  // namespace v41sim::kernels
