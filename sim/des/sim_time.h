// SimTime: simulated time as a signed 64-bit count of picoseconds (about 106
// days of range). Integer time keeps event order exact and runs repeatable;
// doubles appear only at the edges (cost model in, metrics out).
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace v41sim {

class SimTime {
 public:
  constexpr SimTime() = default;
  static constexpr SimTime from_ps(int64_t ps) { return SimTime(ps); }
  static constexpr SimTime from_ns(int64_t ns) { return SimTime(ns * 1000); }
  // From a cost model's figure: a time that is not a number or lies outside
  // [0, max()] throws std::out_of_range (a step or transfer the inputs make
  // longer than the range), never wraps into the past.
  static SimTime from_us(double us) { return from_ps_checked(us * 1e6); }
  static SimTime from_s(double s) { return from_ps_checked(s * 1e12); }
  static constexpr SimTime max() { return SimTime(INT64_MAX); }

  constexpr int64_t ps() const { return ps_; }
  double us() const { return static_cast<double>(ps_) * 1e-6; }
  double ms() const { return static_cast<double>(ps_) * 1e-9; }
  double s() const { return static_cast<double>(ps_) * 1e-12; }

  // A sum past the range throws as a figure outside it does: each of two
  // times can lie inside the range (a step's end, the time now) and their sum
  // not, which would otherwise wrap into the past.
  constexpr SimTime operator+(SimTime other) const { return SimTime(checked_sum(ps_, other.ps_)); }
  constexpr SimTime operator-(SimTime other) const { return SimTime(ps_ - other.ps_); }
  constexpr SimTime& operator+=(SimTime other) {
    ps_ = checked_sum(ps_, other.ps_);
    return *this;
  }
  constexpr auto operator<=>(const SimTime&) const = default;

 private:
  constexpr explicit SimTime(int64_t ps) : ps_(ps) {}
  static SimTime from_ps_checked(double ps) {
    // 2^63 ps is the first value past the range that a double can hold exactly.
    if (!(ps >= 0 && ps < 9223372036854775808.0)) {
      throw std::out_of_range("simulated time out of range: " + std::to_string(ps * 1e-12) +
                              " s (SimTime holds 0 to about 106 days)");
    }
    return SimTime(static_cast<int64_t>(std::llround(ps)));
  }
  static constexpr int64_t checked_sum(int64_t a, int64_t b) {
    int64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum)) {
      throw std::out_of_range(
          "simulated time out of range: " + std::to_string(static_cast<double>(a) * 1e-12) + " s + " +
          std::to_string(static_cast<double>(b) * 1e-12) + " s (SimTime holds 0 to about 106 days)");
    }
    return sum;
  }
  int64_t ps_ = 0;
};

}  // namespace v41sim
