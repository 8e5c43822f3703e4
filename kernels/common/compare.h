// Tolerance comparison of kernel output with its CPU reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
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

// Where a kernel's outputs (matrices of m x n: a GEMM's experts, attention's
// requests of heads x dims) differ from the reference (by over `tolerance`
// of the largest reference value), for a first run on new hardware to read
// the fault off: how many are off, the first of them, and how many of the
// rows mod 16 (the accumulators' owners) and columns mod 128 (an operand
// tile's swizzle) they touch: a fault in one shows as a few of them, a wrong
// scale or descriptor as all.
inline std::string where_outputs_differ(const std::vector<float>& got, const std::vector<float>& want,
                                        int64_t m, int64_t n, const char* matrix = "expert",
                                        double tolerance = 1e-4) {
  if (got.size() != want.size()) return "the outputs' sizes differ";
  double scale = 0;
  for (float v : want) scale = std::max(scale, std::fabs(double{v}));
  int64_t off = 0, first = -1;
  std::set<int64_t> rows_of_16, columns_of_128;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isfinite(got[i]) && std::fabs(double{got[i]} - want[i]) <= tolerance * scale) continue;
    ++off;
    if (first < 0) first = static_cast<int64_t>(i);
    rows_of_16.insert((static_cast<int64_t>(i) / n % m) % 16);
    columns_of_128.insert(static_cast<int64_t>(i) % n % 128);
  }
  if (first < 0) return "no output off";
  return std::to_string(off) + " of " + std::to_string(want.size()) + " outputs off, the first " + matrix +
         " " + std::to_string(first / (m * n)) + " row " + std::to_string(first / n % m) + " column " +
         std::to_string(first % n) + " (got " + std::to_string(got[static_cast<std::size_t>(first)]) +
         ", want " + std::to_string(want[static_cast<std::size_t>(first)]) +
         "); rows mod 16 off: " + std::to_string(rows_of_16.size()) +
         " of 16, columns mod 128 off: " + std::to_string(columns_of_128.size()) + " of 128";
}

}  // namespace v41sim::kernels
