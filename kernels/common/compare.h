// Tolerance comparison of kernel output with its CPU reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace v41sim::kernels {

// Index of the first value off by more than rel_tol x max(1, |want|), or -1.
// Equal values always match (so do equal infinities, e.g. masked slots).
inline int64_t first_mismatch(const std::vector<float>& got, const std::vector<float>& want, float rel_tol) {
  if (got.size() != want.size()) return 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (!(std::fabs(got[i] - want[i]) <= rel_tol * std::fmax(1.0f, std::fabs(want[i])))) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

// ||got - want|| / ||want||; NaN where the sizes differ or a value of got is
// not finite (an unwritten or poisoned output).
inline double relative_norm_error(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::quiet_NaN();
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::quiet_NaN();
    diff += (double{got[i]} - want[i]) * (double{got[i]} - want[i]);
    norm += double{want[i]} * want[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

}  // namespace v41sim::kernels
