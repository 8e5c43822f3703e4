// BlockScaledFormat: values in one element format plus, optionally, one scale
// per group of `scale_group` values (MXFP4 = fp4_e2m1 values, e8m0 scale per
// 32; the V4.1 main KV = fp4_e2m1 values, e4m3 scale per 16; DeepSeek FP8
// weights = fp8_e4m3 values, e8m0 scale per 32x32 block = 1024 values).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sim/common/yaml_reader.h"
#include "sim/model/element_format.h"

namespace v41sim {

struct BlockScaledFormat {
  ElementFormat values = ElementFormat::kBf16;
  std::optional<ElementFormat> scale;  // none: unscaled values
  int64_t scale_group = 0;             // values per scale; > 0 when scale is set

  // Exact bytes for `count` values; count must be a whole number of groups
  // and a whole number of bytes (checked by the loader for cache entries).
  int64_t bytes_for(int64_t count) const;
  // Average bytes per value including scales (for weight totals).
  double bytes_per_value() const;
  std::string describe() const;  // e.g. "fp4_e2m1 + e8m0/32"
};

// Reads {dtype, scale_dtype?, scale_group?} from a map node.
BlockScaledFormat read_block_scaled_format(const YamlNode& node);

}  // namespace v41sim
