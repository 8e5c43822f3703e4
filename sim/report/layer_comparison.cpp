#include "sim/report/layer_comparison.h"

#include <fmt/format.h>

#include <optional>

#include "sim/common/input_error.h"
#include "sim/cost/draft_choice.h"
#include "sim/report/error_band_view.h"

namespace v41sim {
namespace {

std::string published_key(Phase phase) {
  return phase == Phase::kPrefill ? "reuse_layer_kernels_prefill" : "reuse_layer_kernels_decode";
}

}  // namespace

LayerComparison compare_layers(const std::vector<ModelAnalysis>& models, const GpuProfile& gpu,
                               const KernelCostModel& cost, const StepShape& shape) {
  // The backbones alone: models draft differently or not at all, so a layer
  // of each runs one token a sequence and no draft stage runs.
  LayerComparison c{verifying(shape, 0), {}, {}};
  std::optional<InputError> first_refusal;
  for (const ModelAnalysis& m : models) {
    StepGraph graph;
    try {
      graph = build_step_graph(m, c.shape);
    } catch (const InputError& e) {
      // The others still compare: 1M tokens of context is the point of V4, which V3.2 cannot hold.
      c.not_run.push_back({m.spec.name, e.detail()});
      if (!first_refusal) first_refusal = e;
      continue;
    }
    ModelStep step{m.spec.name, !m.spec.moe, time_step(graph, cost), {}, 0, 0, {}, {}};
    step.memory = step_memory(m, gpu, graph);
    step.modes = time_by_mode(step.timing);
    step.band = step_error_band(step.timing, cost.params());
    for (std::size_t i = 0; i < m.plan.size(); ++i) {
      if (m.plan[i].role == LayerRole::kReuse) {
        step.reuse_layer_kernels = static_cast<int64_t>(graph.layers[i].kernels().size());
        break;
      }
    }
    if (const auto it = m.spec.published.find(published_key(shape.phase)); it != m.spec.published.end()) {
      step.published_reuse_layer_kernels = it->second;
    }
    c.models.push_back(std::move(step));
  }
  if (c.models.empty() && first_refusal) throw *first_refusal;
  return c;
}

std::vector<Table> comparison_tables(const LayerComparison& c, const GpuProfile& gpu,
                                     const KernelCostModel& cost) {
  const StepShape& s = c.shape;
  const double tokens =
      static_cast<double>(s.batch) * (s.phase == Phase::kPrefill ? static_cast<double>(s.context) : 1.0);
  Table totals(fmt::format("{} step on {}: batch {}, context {}, EP {}", phase_name(s.phase), gpu.name,
                           s.batch, s.context, s.ep),
               {"model", "step (us)", "band (90%)", "compute (us)", "EP comm (us)", "kernels",
                s.phase == Phase::kPrefill ? "us per 1K prompt tokens" : "us per token"});
  for (const ModelStep& m : c.models) {
    const double per =
        s.phase == Phase::kPrefill ? m.timing.total_us / tokens * 1000.0 : m.timing.total_us / tokens;
    totals.add_row({m.model, format_fixed(m.timing.total_us, 1), m.band.describe(),
                    format_fixed(m.timing.compute_us, 1), format_fixed(m.timing.communication_us, 1),
                    std::to_string(m.timing.kernel_count), format_fixed(per, 2)});
  }
  totals.add_note("kernel model: " + cost.params().label());
  totals.add_note(kErrorBandMethod);
  for (const ModelStep& m : c.models) {
    if (m.dense) totals.add_note(m.model + ": " + std::string(kDenseModelStep));
    if (!m.memory.fits())
      totals.add_note(fmt::format("{}: {} {}", m.model, kKvHeldLabel, kv_memory_phrase(m.memory)));
    if (!m.memory.activations_fit())
      totals.add_note(
          fmt::format("{}: {} {}", m.model, kResidualStreamsLabel, residual_memory_phrase(m.memory)));
  }
  for (const ModelNotRun& m : c.not_run) totals.add_note(m.model + ": cannot run this step: " + m.reason);
  if (s.phase == Phase::kDecode) {
    totals.add_note(
        "decode: the backbones alone, one token a sequence, no speculative draft (`step` times a step with "
        "the drafts a serving run verifies)");
  }

  Table modes("Time by layer mode", {"model", "mode", "layers", "time (us)", "share of step"});
  for (const ModelStep& m : c.models) {
    for (const ModeTime& mode : m.modes) {
      modes.add_row({m.model, mode.mode, std::to_string(mode.layers), format_fixed(mode.time_us, 1),
                     fmt::format("{:.1f}%", 100.0 * mode.time_us / m.timing.total_us)});
    }
  }
  std::vector<Table> out{totals, modes};
  Table reuse("Kernels in one Reuse layer", {"model", "our graph", "DeepSeek's fused kernels (published)"});
  bool any = false;
  for (const ModelStep& m : c.models) {
    if (m.reuse_layer_kernels == 0) continue;
    any = true;
    reuse.add_row(
        {m.model, std::to_string(m.reuse_layer_kernels),
         m.published_reuse_layer_kernels > 0 ? format_fixed(m.published_reuse_layer_kernels, 0) : "-"});
  }
  if (any) {
    reuse.add_note(
        "our graph keeps norms, quantization and EP transfers as separate kernels; fusion level is "
        "set with --mhc (model | fused | three-kernel)");
    out.push_back(reuse);
  }
  return out;
}

nlohmann::json comparison_json(const LayerComparison& c, const GpuProfile& gpu, const KernelCostModel& cost) {
  nlohmann::json models = nlohmann::json::array();
  for (const ModelStep& m : c.models) {
    nlohmann::json modes = nlohmann::json::array();
    for (const ModeTime& mode : m.modes) {
      modes.push_back({{"mode", mode.mode}, {"layers", mode.layers}, {"time_us", mode.time_us}});
    }
    models.push_back({{"model", m.model},
                      {"total_time_us", m.timing.total_us},
                      {"error_band", error_band_json(m.band)},
                      {"compute_us", m.timing.compute_us},
                      {"communication_us", m.timing.communication_us},
                      {"kernel_count", m.timing.kernel_count},
                      {"reuse_layer_kernels", m.reuse_layer_kernels},
                      {"kv_memory", kv_memory_json(m.memory)},
                      {"time_by_mode", modes}});
  }
  nlohmann::json out = {{"gpu", gpu.name},
                        {"phase", phase_name(c.shape.phase)},
                        {"batch", c.shape.batch},
                        {"context", c.shape.context},
                        {"ep", c.shape.ep},
                        {"models", models},
                        {"not_run", nlohmann::json::array()},
                        {"provenance", {{"kernel_model", cost.params().label()}}}};
  for (const ModelNotRun& m : c.not_run) out["not_run"].push_back({{"model", m.model}, {"reason", m.reason}});
  return out;
}

}  // namespace v41sim
