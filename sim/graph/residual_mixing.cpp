#include "sim/graph/residual_mixing.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "sim/common/input_error.h"

namespace v41sim {
namespace {

// What one mHC site computes on the CUDA cores, from the released structure
// (Transformers' and vLLM's DeepseekV4HyperConnection), in operations a
// token: the s flattened streams' sum of squares for their RMS norm (3 a
// value); the pre and post weights through sigmoids and the s x s
// combination through a softmax and `sinkhorn_iters` normalisations of its
// rows and columns (about 4 operations a value each); the streams collapsed
// into the block's input and RMS-normed; after the block, the streams
// combined and its output added to each. The projection to the (2 + s) s
// mixing logits runs on the tensor cores (vLLM calls DeepGEMM's split-K
// tf32_hc_prenorm_gemm), 2 s h (2 + s) s FLOPs a token against the streams'
// (2 s + 2) h x 2 bytes: some 10 FLOPs a byte, far under any TF32 ridge, so
// it is taken to hide under the traffic, and is not timed (assumed), nor is
// the read of its weights, (2 + s) s x s h values a site (2 MB in FP32 for
// V4.1: 0.4 us at 4.8 TB/s; memory fit holds them).
double coefficient_ops(const MhcSite& site) {
  const double s = site.streams.streams;
  const double normalisations = 1.0 + 2.0 * site.sinkhorn_iters;
  return 3.0 * s * site.streams.hidden + 4.0 * 2.0 * s + 4.0 * s * s * normalisations;
}
double pre_mix_ops(const MhcStreams& s) { return 2.0 * s.streams * s.hidden + 3.0 * s.hidden; }
double post_merge_ops(const MhcStreams& s) {
  return 2.0 * s.streams * s.streams * s.hidden + 2.0 * s.streams * s.hidden;
}

double width(const MhcStreams& s) { return s.streams * s.hidden; }

bool runs_single_pass(const LayerContext& c) {
  switch (c.step.engine.mhc_form) {
    case MhcForm::kAsModel:
      return c.model.spec.mhc->single_pass;
    case MhcForm::kSinglePass:
      return true;
    case MhcForm::kThreeKernel:
      return false;
  }
  return false;
}

}  // namespace

void require_mhc_for_form(const ModelSpec& m, MhcForm form, const InputLocation& at) {
  if (form != MhcForm::kAsModel && !m.mhc)
    throw InputError(at, m.name + " has no mHC to run in another form");
}

MhcSite mhc_site(const ModelSpec& m) {
  return {{static_cast<double>(m.mhc->streams), static_cast<double>(m.hidden_size)},
          static_cast<double>(m.mhc->sinkhorn_iters)};
}

Kernel& add_mhc_coefficients(KernelFactory& f, std::string name, double rows, const MhcSite& site) {
  const MhcStreams& s = site.streams;
  return f.elementwise(std::move(name), rows, width(s), rows * s.streams * s.hidden * kBf16ActivationBytes,
                       rows * coefficient_ops(site));
}

Kernel& add_mhc_pre_mix_norm(KernelFactory& f, std::string name, double rows, const MhcStreams& s) {
  return f.elementwise(std::move(name), rows, width(s),
                       rows * (s.streams + 1.0) * s.hidden * kBf16ActivationBytes, rows * pre_mix_ops(s));
}

Kernel& add_mhc_post_merge(KernelFactory& f, std::string name, double rows, const MhcStreams& s) {
  return f.elementwise(std::move(name), rows, width(s),
                       rows * (2.0 * s.streams + 1.0) * s.hidden * kBf16ActivationBytes,
                       rows * post_merge_ops(s));
}

Kernel& add_mhc_fused(KernelFactory& f, std::string name, double rows, const MhcSite& site) {
  const MhcStreams& s = site.streams;
  return f.elementwise(std::move(name), rows, width(s),
                       rows * (2.0 * s.streams + 2.0) * s.hidden * kBf16ActivationBytes,
                       rows * (coefficient_ops(site) + pre_mix_ops(s) + post_merge_ops(s)));
}

// Single-pass mHC reads the streams once and writes them once per block; the
// three-kernel form reads them again for the coefficients and the merge.
void add_residual_mixing(const LayerContext& c, KernelFactory& f, const char* block) {
  const ModelSpec& m = c.model.spec;
  const std::string prefix = std::string(block) + "_";
  if (!m.mhc) {
    const double h = static_cast<double>(m.hidden_size);
    f.elementwise(prefix + "residual_rmsnorm", c.tokens, h, c.tokens * h * 3.0 * kBf16ActivationBytes);
    return;
  }
  const MhcSite site = mhc_site(m);
  if (runs_single_pass(c)) {
    add_mhc_fused(f, prefix + "mhc_fused", c.tokens, site);
    return;
  }
  add_mhc_coefficients(f, prefix + "mhc_coefficients", c.tokens, site);
  add_mhc_pre_mix_norm(f, prefix + "mhc_pre_mix_norm", c.tokens, site.streams);
  add_mhc_post_merge(f, prefix + "mhc_post_merge", c.tokens, site.streams);
}

void add_block_input_only(const LayerContext& c, KernelFactory& f, double rows) {
  const ModelSpec& m = c.model.spec;
  if (!m.mhc) {
    const double h = static_cast<double>(m.hidden_size);
    f.elementwise("attn_cache_rows_rmsnorm", rows, h, rows * h * 2.0 * kBf16ActivationBytes);
    return;
  }
  // The pre-mix's traffic, deriving the coefficients too: nothing else reads these rows' streams.
  const MhcSite site = mhc_site(m);
  Kernel& k = add_mhc_pre_mix_norm(f, "attn_cache_rows_mhc_pre_mix_norm", rows, site.streams);
  k.flops = rows * (coefficient_ops(site) + pre_mix_ops(site.streams));
}

double residual_bytes_per_token(const ModelSpec& m) {
  const double streams = m.mhc ? static_cast<double>(m.mhc->streams) : 1.0;
  return streams * static_cast<double>(m.hidden_size) * kBf16ActivationBytes;
}

std::string mhc_projection_assumption(const ModelSpec& m) {
  if (!m.mhc) return "";
  const double s = static_cast<double>(m.mhc->streams);
  const double h = static_cast<double>(m.hidden_size);
  const double projection_flops = 2.0 * s * h * (2.0 + s) * s;
  const double fused_stream_bytes = (2.0 * s + 2.0) * h * kBf16ActivationBytes;
  return fmt::format(
      "mHC: each site's projection of the flattened streams to their mixing logits (on the tensor cores, "
      "{:.1f} FLOPs a byte of the streams the fused kernel moves) is taken as hidden under that traffic, "
      "with the read of its {} weights (assumed; vLLM runs it as DeepGEMM's tf32_hc_prenorm_gemm); the "
      "norms, "
      "sigmoids, softmax and {} Sinkhorn iterations run on the CUDA cores, counted",
      projection_flops / fused_stream_bytes, m.mhc->projection.describe(), m.mhc->sinkhorn_iters);
}

}  // namespace v41sim
