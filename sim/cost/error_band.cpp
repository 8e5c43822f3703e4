#include "sim/cost/error_band.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

namespace v41sim {

std::string ErrorBand::describe() const {
  if (no_steps) return "no such steps ran";
  if (covered_share <= 0) {
    return "unknown (no kernel class calibrated on measurements or checked against enough published figures)";
  }
  std::string out = fmt::format("±{:.1f}% at 90%", pct);
  std::vector<std::string> notes;
  if (published_share >= 0.999) {
    notes.push_back("the priors' error on published figures");
  } else if (published_share > 0) {
    notes.push_back(
        fmt::format("{:.0f}% of it the priors' error on published figures", 100.0 * published_share));
  }
  if (covered_share < 0.999) {
    out += fmt::format(" on {:.0f}% of the time", 100.0 * covered_share);
    notes.push_back("no band on the rest");
  }
  if (!notes.empty()) out += " (" + fmt::format("{}", fmt::join(notes, "; ")) + ")";
  return out;
}

ErrorBand step_error_band(const StepTiming& timing, const CostParams& params) {
  double total = 0, covered = 0, published = 0, weighted = 0;
  for (int c = 0; c < kKernelClassCount; ++c) {
    const auto kernel_class = static_cast<KernelClass>(c);
    const double t = timing.class_us[static_cast<std::size_t>(c)];
    total += t;
    if (const auto band = params.error_band_pct(kernel_class)) {
      covered += t;
      weighted += t * *band;
      if (params.of(kernel_class).error_band_from_published) published += t;
    }
  }
  ErrorBand out;
  if (covered > 0) {
    out.pct = weighted / covered;
    out.published_share = published / covered;
  }
  if (total > 0) out.covered_share = covered / total;
  return out;
}

}  // namespace v41sim
