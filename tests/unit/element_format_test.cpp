#include "sim/model/element_format.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "sim/model/block_scaled_format.h"

namespace v41sim {
namespace {

TEST(ElementFormat, BitWidths) {
  EXPECT_EQ(bits_of(ElementFormat::kFp32), 32);
  EXPECT_EQ(bits_of(ElementFormat::kBf16), 16);
  EXPECT_EQ(bits_of(ElementFormat::kFp8E4M3), 8);
  EXPECT_EQ(bits_of(ElementFormat::kFp4E2M1), 4);
  EXPECT_EQ(bits_of(ElementFormat::kE8M0), 8);
}

TEST(ElementFormat, ParsesNamesAndRejectsUnknown) {
  EXPECT_EQ(parse_element_format("fp4_e2m1"), ElementFormat::kFp4E2M1);
  EXPECT_EQ(parse_element_format("e8m0"), ElementFormat::kE8M0);
  EXPECT_THROW(parse_element_format("fp6"), std::invalid_argument);
}

TEST(BlockScaledFormat, Mxfp4MainKvEntryIs288Bytes) {
  const BlockScaledFormat main{ElementFormat::kFp4E2M1, ElementFormat::kE4M3, 16};
  EXPECT_EQ(main.bytes_for(512), 256 + 32);
}

TEST(BlockScaledFormat, Fp4IndexKeyIs68Bytes) {
  const BlockScaledFormat key{ElementFormat::kFp4E2M1, ElementFormat::kE8M0, 32};
  EXPECT_EQ(key.bytes_for(128), 68);
}

TEST(BlockScaledFormat, Fp8WindowEntryIs528Bytes) {
  const BlockScaledFormat window{ElementFormat::kFp8E4M3, ElementFormat::kE8M0, 32};
  EXPECT_EQ(window.bytes_for(512), 528);
}

TEST(BlockScaledFormat, BytesPerValueIncludesScales) {
  const BlockScaledFormat mxfp4{ElementFormat::kFp4E2M1, ElementFormat::kE8M0, 32};
  EXPECT_DOUBLE_EQ(mxfp4.bytes_per_value(), 0.5 + 1.0 / 32.0);
  const BlockScaledFormat bf16{ElementFormat::kBf16, std::nullopt, 0};
  EXPECT_DOUBLE_EQ(bf16.bytes_per_value(), 2.0);
  EXPECT_EQ(mxfp4.describe(), "fp4_e2m1 + e8m0/32");
}

}  // namespace
}  // namespace v41sim
