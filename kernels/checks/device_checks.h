// Each CUDA kernel against its CPU reference on seeded inputs: one definition
// of "the device output is right", used by the GPU tests and by the
// measuring harness (which refuses to time a kernel that fails it).
#pragma once

#include <string>
#include <vector>

#include "kernels/gemm/expert_gemm.h"
#include "kernels/indexer/indexer_cuda.h"
#include "kernels/indexer/topk_cuda.h"

namespace v41sim::kernels {

struct CheckResult {
  bool ok = false;
  std::string detail;  // what differed, when !ok
};

CheckResult check_mxfp4_kv();
// Indexer logits on either path (the top-k after them is exact on both).
CheckResult check_indexer(IndexerMath math = IndexerMath::kFp32Units);
CheckResult check_candidate_pool(IndexerMath math = IndexerMath::kFp32Units);
CheckResult check_wgmma_layouts();         // one wgmma of each kind our kernels issue: sm_90 devices only
CheckResult check_indexer_wgmma();         // prefill logits on FP8 wgmma: sm_90 devices only
CheckResult check_indexer_wgmma_decode();  // decode logits and block maxima on FP8 wgmma: sm_90 only
CheckResult check_topk(HistogramCounting counting);
CheckResult check_sparse_decode();
CheckResult check_sparse_decode_mma();
CheckResult check_sparse_decode_wgmma();  // BF16 wgmma: sm_90 devices only (its code is sm_90a)
CheckResult check_compress();
CheckResult check_engram();
CheckResult check_mhc();
CheckResult check_mhc_cluster();  // the single pass by clusters (sm_90 and later)
CheckResult check_expert_gemm();
CheckResult check_expert_gemm_w4a8();
CheckResult check_expert_gemm_w4a16();
CheckResult check_expert_gemm_w4a8_wgmma(WgmmaSchedule schedule);  // sm_90 devices only (its code is sm_90a)
CheckResult check_bf16_gemm();

// Every check by name, in a fixed order (the harness's --checks runs them all).
struct NamedCheck {
  const char* name;
  CheckResult (*run)();
};
const std::vector<NamedCheck>& all_checks();

}  // namespace v41sim::kernels
