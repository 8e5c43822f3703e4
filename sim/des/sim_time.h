// SimTime: simulated time as a signed 64-bit count of picoseconds (about 106
// days of range). Integer time keeps event order exact and runs repeatable;
// doubles appear only at the edges (cost model in, metrics out).
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>

namespace v41sim {

class SimTime {
 public:
  constexpr SimTime() = default;
  static constexpr SimTime from_ps(int64_t ps) { return SimTime(ps); }
  static constexpr SimTime from_ns(int64_t ns) { return SimTime(ns * 1000); }
  static SimTime from_us(double us) { return SimTime(static_cast<int64_t>(std::llround(us * 1e6))); }
  static SimTime from_s(double s) { return SimTime(static_cast<int64_t>(std::llround(s * 1e12))); }
  static constexpr SimTime max() { return SimTime(INT64_MAX); }

  constexpr int64_t ps() const { return ps_; }
  double us() const { return static_cast<double>(ps_) * 1e-6; }
  double ms() const { return static_cast<double>(ps_) * 1e-9; }
  double s() const { return static_cast<double>(ps_) * 1e-12; }

  constexpr SimTime operator+(SimTime other) const { return SimTime(ps_ + other.ps_); }
  constexpr SimTime operator-(SimTime other) const { return SimTime(ps_ - other.ps_); }
  constexpr SimTime& operator+=(SimTime other) {
    ps_ += other.ps_;
    return *this;
  }
  constexpr auto operator<=>(const SimTime&) const = default;

 private:
  constexpr explicit SimTime(int64_t ps) : ps_(ps) {}
  int64_t ps_ = 0;
};

}  // namespace v41sim
