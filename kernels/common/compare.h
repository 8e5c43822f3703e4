// Tolerance comparison of kernel output with its CPU reference.
#pragma once

#include <cmath>
#include <cstdint>
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

}  // namespace v41sim::kernels
