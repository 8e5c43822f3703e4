#include "sim/cost/error_band.h"

#include <fmt/format.h>

namespace v41sim {

std::string ErrorBand::describe() const {
  if (covered_share <= 0) return "unknown (no kernel class calibrated on measurements)";
  const std::string band = fmt::format("±{:.1f}% at 90%", pct);
  if (covered_share >= 0.999) return band;
  return band + fmt::format(" on {:.0f}% of the time (no band on the rest)", 100.0 * covered_share);
}

ErrorBand step_error_band(const StepGraph& graph, const StepTiming& timing, const CostParams& params) {
  double total = 0, covered = 0, weighted = 0;
  for (std::size_t i = 0; i < timing.layers.size(); ++i) {
    const LayerKernels& layer = graph.layers[i];
    for (std::size_t j = 0; j < layer.kernels.size(); ++j) {
      const double t = timing.layers[i].kernels[j].time_us;
      total += t;
      if (const auto band = params.error_band_pct(layer.kernels[j].kernel_class)) {
        covered += t;
        weighted += t * *band;
      }
    }
  }
  ErrorBand out;
  if (covered > 0) out.pct = weighted / covered;
  if (total > 0) out.covered_share = covered / total;
  return out;
}

}  // namespace v41sim
