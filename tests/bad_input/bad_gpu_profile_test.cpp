#include <gtest/gtest.h>

#include <algorithm>

#include "sim/hw/gpu_profile_loader.h"
#include "tests/test_data.h"

namespace v41sim {
namespace {

const std::string kGood = testing::read_text(testing::gpu_path("h200"));

InputError load_error(const std::string& from, const std::string& to) {
  std::string text = kGood;
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  try {
    load_gpu_profile(YamlNode::parse_string(text, "gpu.yaml"));
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "loaded without error";
  return InputError({}, "");
}

TEST(BadGpuProfile, FigureWithoutSource) {
  const InputError e =
      load_error("sm_count: {value: 132, datasheet: \"GH100 as H100 SXM\"}", "sm_count: {value: 132}");
  EXPECT_EQ(e.where().field, "sm_count");
  EXPECT_NE(std::string(e.what()).find("needs its source"), std::string::npos);
  const auto at = kGood.find("sm_count:");
  EXPECT_EQ(e.where().line, 1 + std::count(kGood.begin(), kGood.begin() + static_cast<long>(at), '\n'));
}

TEST(BadGpuProfile, TwoSources) {
  const InputError e = load_error("datasheet: \"GH100 as H100 SXM\"", "datasheet: \"a\", assumed: \"b\"");
  EXPECT_NE(std::string(e.what()).find("give one source"), std::string::npos);
}

TEST(BadGpuProfile, NegativeAndZeroFigures) {
  EXPECT_EQ(load_error("value: 141e9", "value: -141e9").where().field, "hbm_bytes.value");
  EXPECT_EQ(load_error("value: 141e9", "value: 0").where().field, "hbm_bytes.value");
}

// SMs and GPUs come whole (a domain of 1e-30 GPUs once printed nan times).
TEST(BadGpuProfile, CountsAreWhole) {
  EXPECT_EQ(load_error("sm_count: {value: 132", "sm_count: {value: 13.5").where().field, "sm_count.value");
  const InputError e = load_error("nvlink_domain_gpus: {value: 8", "nvlink_domain_gpus: {value: 1e-30");
  EXPECT_EQ(e.where().field, "nvlink_domain_gpus.value");
  EXPECT_NE(std::string(e.what()).find("expected an integer"), std::string::npos) << e.what();
  EXPECT_EQ(load_error("gpus_per_node: {value: 8", "gpus_per_node: {value: 0").where().field,
            "gpus_per_node.value");
}

// A figure typed in another unit (TB/s for bytes per second, GB for bytes)
// would run as a GPU a trillion times slower or smaller: refused at its value,
// naming the unit the file takes. A figure far beyond any GPU is refused too.
TEST(BadGpuProfile, AFigureInAnotherUnitIsRefused) {
  const InputError bandwidth = load_error("hbm_bytes_per_s: {value: 4.8e12", "hbm_bytes_per_s: {value: 4.8");
  EXPECT_EQ(bandwidth.where().field, "hbm_bytes_per_s.value");
  EXPECT_NE(std::string(bandwidth.what()).find("bytes per second (4.8 TB/s is 4.8e12)"), std::string::npos)
      << bandwidth.what();
  EXPECT_EQ(load_error("hbm_bytes: {value: 141e9", "hbm_bytes: {value: 141").where().field,
            "hbm_bytes.value");
  EXPECT_EQ(load_error("fp8: {value: 1979", "fp8: {value: 1979e12").where().field, "tensor_tflops.fp8.value");
  EXPECT_EQ(load_error("hbm_bytes: {value: 141e9", "hbm_bytes: {value: 1e308").where().field,
            "hbm_bytes.value");
  EXPECT_EQ(load_error("nic_bytes_per_s: {value: 50e9", "nic_bytes_per_s: {value: 400").where().field,
            "nic_bytes_per_s.value");
  EXPECT_EQ(load_error("fp32_vector_tflops: {value: 67", "fp32_vector_tflops: {value: 67e12").where().field,
            "fp32_vector_tflops.value");
  // The edges are wide: a GPU a decade past the bundled ones still loads.
  std::string bigger = kGood;
  bigger.replace(bigger.find("hbm_bytes_per_s: {value: 4.8e12"), 31, "hbm_bytes_per_s: {value: 48e12");
  EXPECT_NO_THROW(load_gpu_profile(YamlNode::parse_string(bigger, "gpu.yaml")));
}

TEST(BadGpuProfile, UnknownFigureWithAValue) {
  const InputError e = load_error("fp4: {unsupported: \"Hopper has no FP4 tensor cores\"}",
                                  "fp4: {value: 1, unsupported: \"x\"}");
  EXPECT_EQ(e.where().field, "tensor_tflops.fp4");
}

TEST(BadGpuProfile, MissingField) {
  const InputError e = load_error("gpus_per_node: {value: 8, datasheet: \"HGX 8-GPU baseboard\"}\n", "");
  EXPECT_EQ(e.where().field, "gpus_per_node");
}

TEST(BadGpuProfile, UnknownArchitecture) {
  const InputError e = load_error("architecture: hopper", "architecture: ampere");
  EXPECT_EQ(e.where().field, "architecture");
  EXPECT_NE(std::string(e.what()).find("expected hopper or blackwell"), std::string::npos);
}

TEST(BadGpuProfile, EveryBundledProfileLoads) {
  for (const char* stem : {"h20", "h100_sxm", "h800", "h200", "b200", "gb200_nvl72"}) {
    EXPECT_NO_THROW(load_gpu_profile_file(testing::gpu_path(stem))) << stem;
  }
}

}  // namespace
}  // namespace v41sim
