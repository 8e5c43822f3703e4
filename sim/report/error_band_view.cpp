#include "sim/report/error_band_view.h"

#include <fmt/format.h>

namespace v41sim {

nlohmann::json error_band_json(const ErrorBand& band) {
  const bool known = band.covered_share > 0;
  return {{"known", known},
          {"pct_at_90", known ? nlohmann::json(band.pct) : nlohmann::json()},
          {"covered_share", band.covered_share},
          {"published_share", band.published_share},
          {"no_steps", band.no_steps},
          {"note", band.describe()}};
}

std::string error_band_cell(const ErrorBand& band) {
  if (band.no_steps) return "no steps";
  if (band.covered_share <= 0) return "none";
  std::string origin;
  if (band.published_share >= 0.999) {
    origin = "; published";
  } else if (band.published_share > 0) {
    origin = fmt::format("; {:.0f}% published", 100 * band.published_share);
  }
  return fmt::format("±{:.1f}% (on {:.0f}%{})", band.pct, 100 * band.covered_share, origin);
}

}  // namespace v41sim
