// Published kernel figures (validation/published/*.yaml) and what the kernel
// model predicts for the same shape on the same GPU.
//
// A probe rebuilds the published benchmark's shape with the graph builders
// (a GEMM, a streaming kernel, one of mHC's kernels, an MoE layer's dispatch-experts-combine, one
// EP all-to-all, or a serving engine's whole forward step), times it with
// that GPU's cost model, and reports the published metric (TFLOP/s, GB/s,
// microseconds, or a step's tokens per second per node or per GPU). A
// serving probe runs a whole serving benchmark instead: a deployment under a
// closed loop of prompts, simulated to its last (sim/costing/served_run.h),
// and reports its mean TTFT or TPOT or its tokens per second per GPU.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/common/catalog.h"

namespace v41sim {

struct PublishedReference {
  std::string name;
  std::string source;
  std::string file;
  int line = 0;
  std::string gpu;
  InputLocation gpu_at;  // its line, where an unknown name is reported
  // gemm | grouped_gemm | stream | mhc | topk | moe_layer | all_to_all | attention | step | serving
  std::string probe_kind;
  std::map<std::string, double> probe;
  std::string probe_model;  // moe_layer, attention, step, serving: the model file stem
  // serving: the deployment and the workload (a closed loop's benchmark), by name or path
  std::string probe_deployment;
  std::string probe_workload;
  std::string probe_phase;  // attention, step: decode | prefill
  // mhc: which kernel of V4's three-kernel mHC (sim/graph/residual_mixing.h): pre_mix_norm | post_merge
  std::string probe_kernel;
  // gemm: fp8 | bf16; moe_layer: the routed experts' math, fp8 unless it says bf16.
  std::string probe_math;
  // grouped_gemm (fp8 unless it says) or moe_layer's and serving's routed
  // experts (the model's unless it says): fp8 | fp4 (e2m1, an e8m0 scale per 32, as MXFP4).
  std::string probe_weights;
  // step, serving: the cache format the model's index keys are stored in, where the engine
  // stores them otherwise than the model file says (e.g. index_key_fp8: FP8 keys where no FP4
  // indexer runs); the model file must define it.
  std::string probe_index_key_cache;
  // tflops | gbps | us | tokens_per_s_per_node | tokens_per_s_per_gpu (step);
  // serving: ttft_ms | tpot_ms (the benchmark's means) | ttft_p50_ms (its median) |
  // tokens_per_s_per_gpu (input and output)
  std::string metric;
  // The priors (defaults.yaml) read off this figure, e.g. "gemm.compute_efficiency";
  // empty when it set none: an out-of-sample test of the uncalibrated model.
  std::string sets_prior;
  // What the model does not represent that bears on this figure, where it is
  // known: printed where the figure misses its tolerance (the issue's "where a
  // class misses, say why"), never used to correct a prediction.
  std::string model_lacks;
  double value = 0;
  // serving: the GPUs a throughput published for the whole deployment ran on
  // (reference `gpus`, its value the total over them); 0 where published per GPU.
  int64_t total_over_gpus = 0;
  InputLocation total_over_gpus_at;
  double tolerance_pct = 0;
};

struct ValidationRow {
  PublishedReference reference;
  double predicted = 0;
  double error_pct = 0;  // (predicted - reference) / reference
  bool within_tolerance = false;
  std::string kernel_model;  // calibration label of the GPU's cost model
};

// The GPUs a step figure counts: its node's where it is published per node,
// else 1 (per GPU, and every kernel figure).
double gpus_in_figure(const PublishedReference& reference);

std::vector<PublishedReference> load_published_references(const Catalog& catalog);
// With priors_only, the GPU's kernel model uses the published priors whatever
// calibrations exist (for the priors' own error, published_band_derivation.h).
ValidationRow validate_reference(const PublishedReference& reference, const Catalog& catalog,
                                 bool priors_only = false);

}  // namespace v41sim
