// What runs around each block to carry the residual from layer to layer:
// mHC's mixing of its residual streams (V4's three kernels, or V4.1's single
// pass), or a plain residual add and RMSNorm for a model without mHC.
//
// Each mHC kernel is built by one function here, whether a layer's graph
// needs it or a published kernel figure is checked against it (a validation
// probe of kind mhc): the same bytes and operations either way.
#pragma once

#include <string>

#include "sim/graph/kernel_factory.h"
#include "sim/graph/layer_context.h"

namespace v41sim {

// The residual streams one mHC site mixes: `streams` of `hidden` values each.
struct MhcStreams {
  double streams = 0;
  double hidden = 0;
};

// The streams and the Sinkhorn iterations a site's combination runs.
struct MhcSite {
  MhcStreams streams;
  double sinkhorn_iters = 0;
};
MhcSite mhc_site(const ModelSpec& m);  // for a model with mHC

// V4's three-kernel form, one kernel each for `rows` tokens. The
// coefficients read the streams (their norms, sigmoids and Sinkhorn
// combination); the pre-mix reads them again and writes the block's input,
// collapsed and normed; the post-merge reads them and the block's output and
// writes the streams back combined.
Kernel& add_mhc_coefficients(KernelFactory& f, std::string name, double rows, const MhcSite& site);
Kernel& add_mhc_pre_mix_norm(KernelFactory& f, std::string name, double rows, const MhcStreams& s);
Kernel& add_mhc_post_merge(KernelFactory& f, std::string name, double rows, const MhcStreams& s);
// V4.1's single pass: the streams read once and written once a block.
Kernel& add_mhc_fused(KernelFactory& f, std::string name, double rows, const MhcSite& site);

// A form of mHC asked for (a flag's or a pool's, at `at`) needs a model with
// mHC: a model without it is refused there, not run as if it had been heard.
void require_mhc_for_form(const ModelSpec& m, MhcForm form, const InputLocation& at);

// The mixing before `block` ("attn" or "ffn"): mHC in the form the step asks
// for (the model's unless it says), or the residual add and RMSNorm.
void add_residual_mixing(const LayerContext& c, KernelFactory& f, const char* block);
// The block's input alone for `rows` tokens that run nothing after it (CED's
// cache-only rows): the streams mixed and normed, with no merge back.
void add_block_input_only(const LayerContext& c, KernelFactory& f, double rows);
// What a token carries from layer to layer: mHC's residual streams (or the
// one residual) in BF16, as add_residual_mixing counts their traffic.
double residual_bytes_per_token(const ModelSpec& m);
// How mHC's kernels are timed, for outputs that show a model with mHC
// (empty for a model without): what they leave untimed, and its intensity.
std::string mhc_projection_assumption(const ModelSpec& m);

}  // namespace v41sim
