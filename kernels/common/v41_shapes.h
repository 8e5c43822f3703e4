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
inline constexpr int64_t kV41HeadDim = 512;     // K = V latent per head
inline constexpr int64_t kV41QLoraRank = 1280;  // query down-projection rank
inline constexpr int64_t kV41OutputGroups = 8;  // grouped low-rank output projection
inline constexpr int64_t kV41OutputLoraRank = 1024;
inline constexpr int64_t kV41IndexHeadDim = 128;
inline constexpr int64_t kV41RoutedExperts = 384;
inline constexpr int64_t kV41Vocab = 129280;
// Hierarchical candidate pool built at layer 20: the 2048 blocks of 8 positions
// with the largest block-max logit (16,384 positions) bound Reindex scoring.
inline constexpr int64_t kV41PoolBlockSize = 8;
inline constexpr int64_t kV41PoolTopBlocks = 2048;

}  // namespace v41sim::kernels
