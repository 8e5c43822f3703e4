// What a deployment's pools fix before any request arrives: the step shape
// every step of a pool shares, and the KV room of a decode GPU. The serving
// simulation and the context sweep (sim/costing/context_sweep.h) both start
// from these, so a sweep's steady state and a run's steps agree.
#pragma once

#include "sim/graph/step_shape.h"
#include "sim/hw/gpu_profile.h"
#include "sim/model/model_analysis.h"
#include "sim/serving/deployment_spec.h"
#include "sim/serving/step_time_cache.h"

namespace v41sim {

// The step shape of a pool: its EP group and redundant experts, overlap,
// fused projections, draft stages and the load imbalance its expert placement
// leaves. Throws InputError at the pool's ep (or redundant_experts) where they
// do not deal the model's expert slots evenly.
StepShape pool_step_template(const ModelAnalysis& model, const PoolSpec& pool, const GpuProfile& gpu);

// The step-time cache of a deployment: each pool's template, and two
// micro-batches optional where the pool says `when_faster`.
StepTimeCache deployment_step_times(const ModelAnalysis& model, const KernelCostModel& prefill_cost,
                                    const KernelCostModel& decode_cost, const DeploymentSpec& deployment);

// Bytes of KV a GPU of `pool` holds: what the memory fit leaves after the
// weights (its EP group, redundant experts) and the deployment's reserve.
// Throws as pool_step_template for a pool that does not fit the model.
double kv_bytes_per_gpu(const ModelAnalysis& model, const DeploymentSpec& deployment, const PoolSpec& pool,
                        const GpuProfile& gpu);

// A prompt chunk's tokens carry their residual streams through every layer
// of its step (residual_bytes_per_token): at the deployment's chunk size
// (max_tokens_per_step, a rank's prompt tokens in one step) they must fit the
// reserve the deployment keeps for activations on the GPU that prefills.
// Throws InputError at max_tokens_per_step (or the reserve) where they do not.
void require_prefill_chunk_fits_reserve(const ModelAnalysis& model, const DeploymentSpec& deployment,
                                        const GpuProfile& prefill_gpu);

// Each node's DRAM holds the model's host-resident weights (Engram's tables,
// a copy a node) beside the share the deployment parks window state in
// (host_pool_fraction): together they must fit. Throws InputError at
// host_pool_fraction where they do not.
void require_host_pool_fits_beside_host_weights(const ModelAnalysis& model, const DeploymentSpec& deployment,
                                                const GpuProfile& gpu);

// Bytes of KV a GPU of each pool holds (kv_bytes_per_gpu; the prefill
// pool's only where disaggregated), once every check a deployment's layout
// passes before it serves a request has passed, each throwing InputError at
// its line: each pool's memory fit, the prompt chunk against the reserve, and
// the host pool beside the host-resident weights on every pool's nodes. What
// the serving simulation starts from, and what a capacity grid, context or
// frontier asks of each layout before serving one (layout_refusals).
struct PoolKvRoom {
  double decode_bytes_per_gpu = 0;
  double prefill_bytes_per_gpu = 0;  // 0 where one pool serves both
};
PoolKvRoom servable_kv_room(const ModelAnalysis& model, const DeploymentSpec& deployment,
                            const GpuProfile& prefill_gpu, const GpuProfile& decode_gpu);

// Sessions of `context` tokens (global KV + window and compressor state) that
// one decode rank holds: one GPU's KV room (a tensor-parallel rank's GPUs each
// hold its sessions whole).
int64_t sessions_per_decode_rank(const ModelAnalysis& model, const DeploymentSpec& deployment,
                                 const GpuProfile& decode_gpu, int64_t context);

}  // namespace v41sim
