// mHC residual mixing over 4 streams, in the two forms the V4.1 report
// contrasts, with the released coefficient function (mhc_coefficients.h):
//  - three kernels a site: the projection of the streams (tensor cores, split
//    over the reduction), the block input (which finishes the coefficients),
//    and after the block the merge back into the streams;
//  - the single pass: block i's merge, block i+1's projection and its input
//    in one kernel, so the streams are read once and written once; by token
//    tiles (a CTA holds a few tokens' merged streams in shared memory) or by
//    clusters (8 or 16 CTAs share each token, each a share of the hidden
//    size, with its share of fn resident: mhc_cluster_slices.h).
// Streams X: tokens x 4 x H, block output y and block input: tokens x H, all
// BF16 as the model keeps them; coefficients: tokens x 24 FP32; arithmetic in
// FP32. H must be a multiple of 8 (16-byte vectors of 8 values).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common/bf16_values.h"
#include "kernels/mhc/mhc_coefficients.h"

namespace v41sim::kernels {

// Random site parameters for hidden size H: fn of unit-variance dot products
// with unit-variance streams, scales and biases near the trained ones' sizes.
MhcWeights random_mhc_weights(int64_t hidden, uint32_t seed);

// CPU references, FP64 sums where the kernels reduce.
std::vector<float> mhc_coefficients_reference(const std::vector<uint16_t>& X, const MhcWeights& w,
                                              int64_t tokens, int64_t hidden);
std::vector<uint16_t> mhc_pre_mix_reference(const std::vector<uint16_t>& X, const std::vector<float>& coeffs,
                                            int64_t tokens, int64_t hidden);
std::vector<uint16_t> mhc_post_merge_reference(const std::vector<uint16_t>& X, const std::vector<uint16_t>& y,
                                               const std::vector<float>& coeffs, int64_t tokens,
                                               int64_t hidden);

// Block i's merge, then block i+1's coefficients (from the merged streams as
// stored, in BF16) and its input: what both forms compute.
struct MhcStepResult {
  std::vector<uint16_t> streams;     // X'
  std::vector<uint16_t> next_input;  // block i+1's input
  std::vector<float> next_coeffs;    // block i+1's coefficients
};
MhcStepResult mhc_step_reference(const std::vector<uint16_t>& X, const std::vector<uint16_t>& y,
                                 const std::vector<float>& coeffs, const MhcWeights& next, int64_t tokens,
                                 int64_t hidden);

// Device-side parameters of a site.
struct MhcSiteDevice {
  const uint16_t* fn;
  MhcScales scales;
};

// The three-kernel form's launchers (device pointers). The projection writes
// `splits` partial sums a token (mhc_projection_workspace_floats,
// mhc_projection_tiles.h); the block input finishes them into the
// coefficients, which the merge reads.
void launch_mhc_projection(const uint16_t* X, const uint16_t* fn, float* workspace, int splits,
                           int64_t tokens, int64_t hidden);
void launch_mhc_pre_mix(const uint16_t* X, const float* workspace, int splits, const MhcScales& scales,
                        float* coeffs, uint16_t* x_in, int64_t tokens, int64_t hidden);
void launch_mhc_post_merge(const uint16_t* X, const uint16_t* y, const float* coeffs, uint16_t* X_out,
                           int64_t tokens, int64_t hidden);
// The single pass, `tokens_per_cta` (mhc_fused_tokens_per_cta) tokens a CTA.
void launch_mhc_fused(const uint16_t* X, const uint16_t* y, const float* coeffs, const MhcSiteDevice& next,
                      uint16_t* X_out, uint16_t* next_input, float* next_coeffs, int tokens_per_cta,
                      int64_t tokens, int64_t hidden);
// The launch choices on the current device.
int mhc_projection_splits_here(int64_t tokens, int64_t hidden);
int mhc_fused_tokens_per_cta_here(int64_t tokens, int64_t hidden);
// Whether the single pass fits `tokens_per_cta` tokens' streams in shared memory here.
bool mhc_fused_fits_here(int tokens_per_cta, int64_t hidden);

// The single pass by clusters of 8 or 16 CTAs (mhc_cluster_slices.h, sm_90
// and later): how many clusters run and how many token rows a tile; no
// clusters where the slices do not fit in shared memory or the device cannot
// schedule the cluster size.
struct MhcClusterPlan {
  int ctas = 0;
  int clusters = 0;
  int tile_rows = 0;
};
MhcClusterPlan mhc_cluster_plan_here(int ctas, int64_t tokens, int64_t hidden);
void launch_mhc_cluster_pass(const uint16_t* X, const uint16_t* y, const float* coeffs,
                             const MhcSiteDevice& next, uint16_t* X_out, uint16_t* next_input,
                             float* next_coeffs, const MhcClusterPlan& plan, int64_t tokens, int64_t hidden);

// Host wrappers for the checks: one site step by each form (the token-tile
// single pass with `tokens_per_cta` 1, 2 or 4 tokens a CTA; the cluster pass
// in clusters of `ctas` CTAs with `tile_rows` 1 to 8 token rows a tile, 0 for
// the plan's; it throws where the device cannot run that cluster size).
MhcStepResult mhc_three_kernel_cuda(const std::vector<uint16_t>& X, const std::vector<uint16_t>& y,
                                    const std::vector<float>& coeffs, const MhcWeights& next, int64_t tokens,
                                    int64_t hidden);
MhcStepResult mhc_fused_cuda(const std::vector<uint16_t>& X, const std::vector<uint16_t>& y,
                             const std::vector<float>& coeffs, const MhcWeights& next, int tokens_per_cta,
                             int64_t tokens, int64_t hidden);
MhcStepResult mhc_cluster_pass_cuda(const std::vector<uint16_t>& X, const std::vector<uint16_t>& y,
                                    const std::vector<float>& coeffs, const MhcWeights& next, int ctas,
                                    int tile_rows, int64_t tokens, int64_t hidden);

}  // namespace v41sim::kernels
