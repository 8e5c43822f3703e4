#include "sim/costing/decode_frontier.h"

#include <fmt/format.h>

#include <cmath>

#include "sim/common/input_error.h"
#include "sim/costing/deployment_cost_models.h"
#include "sim/costing/deployment_plan.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/serving/pool_setup.h"

namespace v41sim {
namespace {

// Batches 1, 2, 4, ... and the largest that fits.
std::vector<int64_t> batches_up_to(int64_t largest) {
  std::vector<int64_t> out;
  for (int64_t b = 1; b < largest; b *= 2) out.push_back(b);
  out.push_back(largest);
  return out;
}

// q beats p: as fast for users or faster, and cheaper per output token or as
// cheap, one of the two strictly. Without both prices, only a point of the
// same GPU can beat p, by tokens/s per GPU instead.
bool dominates(const FrontierPoint& q, const FrontierPoint& p, bool same_gpu) {
  const double q_user = q.rate.tokens_per_s_per_user, p_user = p.rate.tokens_per_s_per_user;
  if (q.cost_known && p.cost_known) {
    return q_user >= p_user && q.usd_per_million_output <= p.usd_per_million_output &&
           (q_user > p_user || q.usd_per_million_output < p.usd_per_million_output);
  }
  const double q_gpu = q.rate.tokens_per_s_per_gpu, p_gpu = p.rate.tokens_per_s_per_gpu;
  return same_gpu && q_user >= p_user && q_gpu >= p_gpu && (q_user > p_user || q_gpu > p_gpu);
}

}  // namespace

DecodeFrontier decode_frontier(const Catalog& catalog, const ModelAnalysis& model,
                               const DeploymentSpec& deployment, int64_t context) {
  require_servable_context(model.spec, context, "--context");
  const DeploymentCostModels gpus(catalog, deployment);
  const GpuCostModel& decode = gpus.decode;
  StepTimeCache steps = deployment_step_times(model, gpus.prefill.cost(), decode.cost(), deployment);
  DecodeFrontier f{deployment,
                   context,
                   0,
                   decode.cost().params().label(),
                   decode.gpu().price_usd_per_gpu_hour.provenance().label(),
                   {}};
  f.sessions_per_gpu = sessions_per_decode_rank(model, deployment, decode.gpu(), context);
  if (f.sessions_per_gpu < 1) {
    throw InputError({deployment.file, 0, "--context"},
                     fmt::format("not one {}-token session fits in a decode GPU's KV memory", context));
  }
  const SourcedValue& price = decode.gpu().price_usd_per_gpu_hour;
  for (const int64_t batch : batches_up_to(f.sessions_per_gpu)) {
    FrontierPoint& p = f.points.emplace_back();
    p.rate = decode_rate(steps, batch, context, deployment.decode.attention_tp);
    p.cost_known = price.known();
    if (p.cost_known) p.usd_per_million_output = price.value() / 3600.0 / p.rate.tokens_per_s_per_gpu * 1e6;
  }
  return f;
}

std::vector<DeploymentSpec> frontier_layouts(const Catalog& catalog, const ModelSpec& model,
                                             const DeploymentSpec& base,
                                             const std::vector<std::string>& gpus) {
  const int64_t routed = model.moe ? model.moe->routed_experts : 0;
  PlanGrid grid{.gpus = gpus, .eps = {base.decode.ep}, .routed_experts = routed};
  for (const std::string& gpu : gpus.empty() ? std::vector<std::string>{base.decode.gpu} : gpus) {
    const std::string file =
        gpus.empty() ? catalog.resolve_gpu(gpu, base.decode.gpu_at) : catalog.resolve_gpu(gpu);
    const int64_t domain = load_gpu_profile_file(file).nvlink_domain();
    if (routed == 0 || domain <= base.decode.ep) continue;
    if (replicas_to_deal(routed, domain, base.decode.redundant_experts) > routed)
      continue;  // the model refuses
    grid.domain_eps.emplace(gpu, domain);
  }
  return plan_variants(base, grid);
}

void mark_pareto(std::vector<DecodeFrontier>& frontiers) {
  for (DecodeFrontier& f : frontiers) {
    for (FrontierPoint& p : f.points) {
      p.pareto = true;
      for (const DecodeFrontier& g : frontiers) {
        const bool same_gpu = g.deployment.decode.gpu == f.deployment.decode.gpu;
        for (const FrontierPoint& q : g.points) p.pareto = p.pareto && !dominates(q, p, same_gpu);
      }
    }
  }
}

}  // namespace v41sim
