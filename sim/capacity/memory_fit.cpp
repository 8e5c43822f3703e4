#include "sim/capacity/memory_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace v41sim {
namespace {

constexpr double kGB = 1e9;

void check_parallelism(const ModelAnalysis& model, const FitRequest& r) {
  const InputLocation gpus_flag{"", 0, "--gpus"};
  const InputLocation ep_flag{"", 0, "--ep"};
  if (r.gpus <= 0) throw InputError(gpus_flag, fmt::format("expected a positive GPU count, got {}", r.gpus));
  if (r.ep <= 0) throw InputError(ep_flag, fmt::format("expected a positive EP size, got {}", r.ep));
  if (r.context_tokens <= 0) {
    throw InputError({"", 0, "--context"},
                     fmt::format("expected a positive token count, got {}", r.context_tokens));
  }
  if (r.gpus % r.ep != 0) {
    throw InputError(ep_flag, fmt::format("EP size {} does not divide the {} GPUs", r.ep, r.gpus));
  }
  require_ep_divides_expert_slots(model.spec, r.ep, r.redundant_experts, ep_flag,
                                  {"", 0, "--redundant-experts"});
  if (r.attention_tp < 1 || r.gpus % r.attention_tp != 0) {
    throw InputError(
        {"", 0, "--attention-tp"},
        fmt::format("expected a GPU count an attention rank spans that divides the {} GPUs, got {}", r.gpus,
                    r.attention_tp));
  }
  if (r.attention_tp > 1 && r.dense_placement == DensePlacement::kSharded) {
    throw InputError({"", 0, "--attention-tp"},
                     "expected 1 with --dense-placement sharded (which already splits every dense weight "
                     "over all the GPUs); tensor-parallel ranks place the dense weights replicated");
  }
}

// The flags that shrink what each GPU of `r` holds: only those not already
// at their smallest (experts already 4-bit gain nothing from mxfp4).
std::string flag_remedies(const ModelAnalysis& model, const FitRequest& r) {
  std::vector<std::string> tries;
  if (!model.spec.moe) {
    if (r.dense_placement == DensePlacement::kSharded) return "more GPUs, or a GPU with more HBM";
    return "--dense-placement sharded over enough GPUs, or a GPU with more HBM: a dense model has no "
           "experts for EP to spread";
  }
  tries.emplace_back(r.ep < r.gpus ? "a larger --ep" : "more GPUs with a larger --ep");
  if (r.dense_placement == DensePlacement::kReplicated) tries.emplace_back("--dense-placement sharded");
  if (r.weights.routed_experts.values != ElementFormat::kFp4E2M1) tries.emplace_back("--weights-dtype mxfp4");
  if (r.redundant_experts > 0) tries.emplace_back("fewer --redundant-experts");
  tries.emplace_back("a GPU with more HBM");
  std::string text = tries.front();
  for (size_t i = 1; i < tries.size(); ++i) text += (i + 1 == tries.size() ? " or " : ", ") + tries[i];
  return text;
}

}  // namespace

std::vector<SessionsWithIndexKeys> sessions_with_other_index_keys(const ModelAnalysis& model,
                                                                  const GpuProfile& gpu,
                                                                  const FitRequest& request) {
  std::vector<SessionsWithIndexKeys> out;
  for (const std::string& format : other_index_key_formats(model.spec)) {
    const ModelAnalysis keyed = analyze_with_index_keys(model.spec, format);
    out.push_back({format, fit_memory(keyed, gpu, request).sessions, keyed.kv.global_bytes_per_token});
  }
  return out;
}

std::string_view placement_name(DensePlacement placement) {
  return placement == DensePlacement::kReplicated ? "replicated" : "sharded";
}

SourcedValue default_reserve_fraction() {
  return SourcedValue::assumed(0.10,
                               "10% of HBM held for activations, workspace and CUDA context "
                               "(vLLM's default gpu_memory_utilization 0.9)");
}

double reserve_bytes_per_gpu(const GpuProfile& gpu, double fraction) {
  return gpu.hbm_bytes.value() * fraction;
}

FitResult lay_out_memory(const ModelAnalysis& model, const GpuProfile& gpu, const FitRequest& request) {
  check_parallelism(model, request);
  const WeightBytes weights = weight_bytes(model.spec, model.params, request.weights);
  FitResult fit;
  fit.hbm_bytes_per_gpu = gpu.hbm_bytes.value();
  const double experts = model.spec.moe ? static_cast<double>(model.spec.moe->routed_experts) : 1.0;
  const double replicas = (experts + static_cast<double>(request.redundant_experts)) / experts;
  fit.routed_expert_bytes_per_gpu = weights.routed_experts * replicas / static_cast<double>(request.ep);
  const double share =
      request.dense_placement == DensePlacement::kReplicated ? 1.0 : 1.0 / static_cast<double>(request.gpus);
  // A tensor-parallel rank's GPUs each hold a share of what it splits: by
  // heads always, by columns where the rank is its own EP group.
  const double unsplit = 1.0 - 1.0 / static_cast<double>(request.attention_tp);
  const bool own_group = request.ep <= request.attention_tp;
  const auto split = [own_group](const WeightBytes::TensorParallelSplit& s) {
    return s.by_heads + (own_group ? s.by_columns : 0.0);
  };
  fit.dense_bytes_per_gpu = (weights.dense + weights.mhc - split(weights.dense_split) * unsplit) * share;
  fit.embedding_bytes_per_gpu = weights.embedding * (1.0 - unsplit) * share;
  // The draft's experts spread over the EP group without replicas (the step
  // graph gives them none); the rest of its stages sits beside the dense weights.
  fit.draft_bytes_per_gpu = weights.draft_experts / static_cast<double>(request.ep) +
                            (weights.draft_other - split(weights.draft_split) * unsplit) * share;
  fit.weight_bytes_per_gpu = fit.routed_expert_bytes_per_gpu + fit.dense_bytes_per_gpu +
                             fit.embedding_bytes_per_gpu + fit.draft_bytes_per_gpu;
  fit.reserve_bytes_per_gpu = reserve_bytes_per_gpu(gpu, request.reserve_fraction.value());
  fit.kv_bytes_per_gpu = fit.hbm_bytes_per_gpu - fit.weight_bytes_per_gpu - fit.reserve_bytes_per_gpu;
  fit.session_bytes = model.kv.session_bytes(request.context_tokens);
  const double kv_bytes = std::max(fit.kv_bytes_per_gpu, 0.0);  // none where the weights overflow
  if (request.dense_placement == DensePlacement::kSharded) {
    fit.kv_split_ways = std::max<int64_t>(1, std::min(request.gpus, model.spec.attention.kv_heads));
  }
  const auto ways = static_cast<double>(fit.kv_split_ways);
  fit.kv_tokens_per_gpu = static_cast<int64_t>(std::floor(kv_bytes * ways / model.kv.global_bytes_per_token));
  if (request.dense_placement == DensePlacement::kReplicated) {
    // Data-parallel attention: a session's KV lives whole on one GPU, or on
    // each GPU of its tensor-parallel rank.
    const int64_t per_rank = static_cast<int64_t>(std::floor(kv_bytes / fit.session_bytes));
    fit.sessions = per_rank * (request.gpus / request.attention_tp);
    fit.sessions_per_gpu = fit.sessions / request.gpus;
  } else {
    // Sharded attention (tensor parallel): every GPU holds each session's
    // KV, split `ways` ways (whole where the model has one KV head).
    fit.sessions = static_cast<int64_t>(std::floor(kv_bytes * ways / fit.session_bytes));
    fit.sessions_per_gpu = fit.sessions / request.gpus;
  }
  fit.host_weight_bytes_per_node = weights.host;
  if (gpu.host_dram_bytes_per_node.known()) {
    fit.host_dram_bytes_per_node = gpu.host_dram_bytes_per_node.value();
  }
  return fit;
}

FitResult fit_memory(const ModelAnalysis& model, const GpuProfile& gpu, const FitRequest& request) {
  FitResult fit = lay_out_memory(model, gpu, request);
  if (fit.kv_bytes_per_gpu <= 0) {
    const bool from_flags = request.asked_at.field.empty();
    const InputLocation where =
        from_flags ? InputLocation{model.spec.file, 0, "--gpus/--ep"} : request.asked_at;
    // A dense model's replicated weights shrink neither with EP nor with more GPUs.
    const bool dense_replicated = !model.spec.moe && request.dense_placement == DensePlacement::kReplicated;
    const std::string remedies =
        from_flags ? flag_remedies(model, request)
        : dense_replicated
            ? "a GPU with more HBM: a dense model has no experts for EP to spread, and serving runs "
              "replicate its weights on every GPU"
            : request.remedies;
    throw InputError(where,
                     fmt::format("{} does not fit on {} x {} at EP {} ({} dense weights): {:.1f} GB of "
                                 "weights + {:.1f} GB reserve per GPU exceed {:.1f} GB of HBM (try {})",
                                 model.spec.name, request.gpus, gpu.name, request.ep,
                                 placement_name(request.dense_placement), fit.weight_bytes_per_gpu / kGB,
                                 fit.reserve_bytes_per_gpu / kGB, fit.hbm_bytes_per_gpu / kGB, remedies));
  }
  return fit;
}

}  // namespace v41sim
