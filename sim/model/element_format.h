// Element formats: the number formats that weights, caches and scales are
// stored in. Sizes of cache entries and weights are computed from these, never
// typed in: a model file names formats, the code counts bits.
#pragma once

#include <string>
#include <string_view>

namespace v41sim {

enum class ElementFormat {
  kFp32,
  kBf16,
  kFp16,
  kFp8E4M3,
  kFp8E5M2,
  kFp4E2M1,
  kE8M0,  // power-of-two scale (OCP MX "ue8m0")
  kE4M3,  // FP8 scale used by NVFP4/MXFP4-style formats
};

int bits_of(ElementFormat format);
std::string_view name_of(ElementFormat format);
// Throws std::invalid_argument listing the known names; loaders turn it into an InputError.
ElementFormat parse_element_format(std::string_view name);
std::string known_element_format_names();

}  // namespace v41sim
