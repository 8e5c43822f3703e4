// DeepSeek-V4.1-Flash's shapes as the kernels and the harness use them. The
// GPU machine has no YAML reader, so they are written here once; a test
// checks each against models/deepseek_v4_1_flash.yaml.
#pragma once

#include <cstdint>

namespace v41sim::kernels {

inline constexpr int64_t kV41Hidden = 5120;
inline constexpr int64_t kV41ExpertWidth = 2304;
inline constexpr int64_t kV41QueryHeads = 64;
inline constexpr int64_t kV41IndexHeads = 32;
inline constexpr int64_t kV41TopK = 512;

}  // namespace v41sim::kernels
