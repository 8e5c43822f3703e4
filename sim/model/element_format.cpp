#include "sim/model/element_format.h"

#include <array>
#include <stdexcept>
#include <utility>

namespace v41sim {
namespace {

struct FormatInfo {
  ElementFormat format;
  std::string_view name;
  int bits;
};

// Bit widths per the IEEE / OCP Microscaling (MX) v1.0 specification.
constexpr std::array<FormatInfo, 8> kFormats{{
    {ElementFormat::kFp32, "fp32", 32},
    {ElementFormat::kBf16, "bf16", 16},
    {ElementFormat::kFp16, "fp16", 16},
    {ElementFormat::kFp8E4M3, "fp8_e4m3", 8},
    {ElementFormat::kFp8E5M2, "fp8_e5m2", 8},
    {ElementFormat::kFp4E2M1, "fp4_e2m1", 4},
    {ElementFormat::kE8M0, "e8m0", 8},
    {ElementFormat::kE4M3, "e4m3", 8},
}};

const FormatInfo& info_of(ElementFormat format) {
  for (const FormatInfo& info : kFormats) {
    if (info.format == format) return info;
  }
  throw std::logic_error("element format missing from kFormats");
}

}  // namespace

int bits_of(ElementFormat format) { return info_of(format).bits; }

std::string_view name_of(ElementFormat format) { return info_of(format).name; }

std::string known_element_format_names() {
  std::string names;
  for (const FormatInfo& info : kFormats) {
    names += (names.empty() ? "" : ", ") + std::string(info.name);
  }
  return names;
}

ElementFormat parse_element_format(std::string_view name) {
  for (const FormatInfo& info : kFormats) {
    if (info.name == name) return info.format;
  }
  throw std::invalid_argument("unknown element format '" + std::string(name) +
                              "' (expected one of: " + known_element_format_names() + ")");
}

}  // namespace v41sim
