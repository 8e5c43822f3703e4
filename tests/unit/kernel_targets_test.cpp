// The kernels' performance targets read off a measured file: each target over
// the rows it covers, against the ceilings the same file carries.
#include "sim/validation/kernel_targets.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "kernels/harness/csv_rows.h"
#include "sim/common/input_error.h"

namespace v41sim {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kHeads = 64;

// A file written through the harness's own writer: ceilings of 4000 GB/s
// (copy), 50 GB/s (host link), 1000 TFLOP/s (dense FP8) and 500 TFLOP/s
// (dense BF16) unless dropped.
fs::path write_file(const std::string& name, bool with_host_ceiling = true) {
  const fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  const int fd = ::open((dir / "kernels.csv").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const kernels::RowWriter w(fd, {4000.0, 1000.0, 500.0, 50.0, 50.0});
  for (const char* key : {"gpu", "sm_count", "driver", "cuda", "date", "git_commit"}) w.meta(key, "x");
  w.meta("copy_gbps", "4000");
  w.meta("fp8_dense_tflops", "1000");
  w.meta("bf16_dense_tflops", "500");
  if (with_host_ceiling) w.meta("host_to_device_gbps", "50");
  w.header();
  // Bytes over microseconds x 1e-3 is GB/s: 1e8 B in 33.3 us is 3000 GB/s (75% of copy).
  w.row({"mxfp4_kv_quantize", "elementwise", "fp32", 1, 1, 1, 1, 0, 0, 1e8, {100.0 / 3.0, 30, 40}});
  w.row({"mxfp4_kv_quantize", "elementwise", "fp32", 2, 1, 1, 1, 0, 0, 1e8, {50.0, 50, 50}});  // 50%
  w.row({"mxfp4_kv_quantize", "elementwise", "fp32", 3, 1, 1, 1, 0, 0, 1e6, {10.0, 10, 10}});  // too small to
                                                                                               // count
  w.row({"sparse_attention_decode",
         "attention",
         "bf16",
         32 * kHeads,
         640,
         1024,
         1,
         65536,
         2.5e10,  // 250 FLOP per byte
         1e8,
         {62.5, 60, 70}});
  w.row({"sparse_attention_decode",
         "attention",
         "bf16",
         16 * kHeads,
         640,
         1024,
         1,
         65536,
         1e9,
         1e8,
         {25.0, 25, 25}});
  w.row(
      {"engram_host_gather", "host_copy", "fp32", 65536, 264, 1, 1, 0, 0, 4e7, {1000.0, 990, 1010}});  // 40
                                                                                                       // GB/s
  // 2 x 8 x 512 x 4608 x 5120 FLOP in 300 us: 644 TFLOP/s, 64% of dense FP8.
  const double flops = 2.0 * 8 * 512 * 4608 * 5120;
  w.row({"expert_gate_up", "grouped_gemm", "fp8", 512, 4608, 5120, 8, 0, flops, 1e8, {300.0, 290, 310}, 1e7});
  w.row({"expert_gate_up_fp8_widened_baseline",
         "grouped_gemm",
         "fp8",
         512,
         4608,
         5120,
         8,
         0,
         flops,
         2e8,
         {3000.0, 2900, 3100},
         1e7});
  w.row({"expert_gate_up", "grouped_gemm", "fp8", 16, 4608, 5120, 48, 0, 1e10, 6e8, {200.0, 190, 210}, 1e6});
  // The three-kernel form as its three rows (2e8 bytes in 100 us together); a
  // token count with only two of them pairs with nothing.
  w.row({"mhc_projection", "elementwise", "fp32", 4096, 20480, 1, 1, 0, 0, 5e7, {30.0, 29, 31}});
  w.row({"mhc_pre_mix", "elementwise", "fp32", 4096, 20480, 1, 1, 0, 0, 6e7, {25.0, 24, 26}});
  w.row({"mhc_post_merge", "elementwise", "fp32", 4096, 20480, 1, 1, 0, 0, 9e7, {45.0, 44, 46}});
  // The design's own ratio with 4 streams: 10 / 18 of the bytes, "about half".
  w.row({"mhc_projection", "elementwise", "fp32", 1024, 20480, 1, 1, 0, 0, 4e7, {30.0, 29, 31}});
  w.row({"mhc_pre_mix", "elementwise", "fp32", 1024, 20480, 1, 1, 0, 0, 5e7, {25.0, 24, 26}});
  w.row({"mhc_post_merge", "elementwise", "fp32", 1024, 20480, 1, 1, 0, 0, 9e7, {45.0, 44, 46}});
  w.row({"mhc_single_pass", "elementwise", "fp32", 1024, 20480, 1, 1, 0, 0, 1e8, {60.0, 59, 61}});
  w.row({"mhc_projection", "elementwise", "fp32", 64, 20480, 1, 1, 0, 0, 1e6, {3.0, 3, 3}});
  w.row({"mhc_post_merge", "elementwise", "fp32", 64, 20480, 1, 1, 0, 0, 2e6, {4.0, 4, 4}});
  w.row({"mhc_single_pass", "elementwise", "fp32", 64, 20480, 1, 1, 0, 0, 1e6, {100.0, 100, 100}});
  w.row({"mhc_single_pass", "elementwise", "fp32", 4096, 20480, 1, 1, 0, 0, 1e8, {55.0, 54, 56}});
  // The single pass's slower form at the same token count (the harness names
  // it a baseline): no target reads it.
  w.row({"mhc_single_pass_by_token_tiles_baseline",
         "elementwise",
         "fp32",
         4096,
         20480,
         1,
         1,
         0,
         0,
         1e8,
         {500.0, 490, 510}});
  ::close(fd);
  return dir;
}

TEST(KernelTargets, EachTargetOverTheRowsItCovers) {
  const auto results =
      evaluate_kernel_targets(load_measurements(write_file("v41sim_targets").string()), kHeads);
  ASSERT_EQ(results.size(), 7u);
  const TargetResult& quantize = results[0];
  EXPECT_EQ(quantize.rows, 2);  // the 1 MB launch is not a streaming row
  EXPECT_NEAR(quantize.best, 0.75, 1e-3);
  EXPECT_NEAR(quantize.worst, 0.5, 1e-3);
  EXPECT_FALSE(quantize.met);
  EXPECT_NE(quantize.worst_row.find("mxfp4_kv_quantize 2x"), std::string::npos) << quantize.worst_row;
  const TargetResult& decode = results[1];
  EXPECT_EQ(decode.rows, 1);  // batch 16 is below the target's batch 32
  EXPECT_NEAR(decode.worst, 0.4, 1e-3);
  EXPECT_FALSE(decode.met);
  // 250 FLOP per byte at 500 TFLOP/s draw at most 2000 GB/s, half the copy bandwidth.
  ASSERT_TRUE(decode.worst_roofline.has_value());
  EXPECT_NEAR(*decode.worst_roofline, 0.5, 1e-9);
  EXPECT_NEAR(results[2].worst, 0.8, 1e-3);  // Engram against the host link, not HBM
  EXPECT_TRUE(results[2].met);
  const TargetResult& experts = results[3];
  EXPECT_EQ(experts.rows, 1);  // not the baseline, not the decode shape
  EXPECT_NEAR(experts.worst, 2.0 * 8 * 512 * 4608 * 5120 / 300.0 / 1e6 / 1000.0, 1e-6);
  EXPECT_TRUE(experts.met);
  // ~1900 FLOP per byte: at 4000 GB/s the bytes would allow far more than the dense rate.
  ASSERT_TRUE(experts.worst_roofline.has_value());
  EXPECT_DOUBLE_EQ(*experts.worst_roofline, 1.0);
  EXPECT_FALSE(quantize.worst_roofline.has_value());
  EXPECT_EQ(results[4].rows, 2);  // 64 tokens lack a three-kernel row
  EXPECT_NEAR(results[4].best, 0.5, 1e-9);
  EXPECT_NEAR(results[4].worst, 10.0 / 18.0, 1e-9);
  EXPECT_TRUE(results[4].met);
  EXPECT_NEAR(results[5].worst, 1.1, 1e-9);  // 55% of the time for 50% of the bytes
  EXPECT_TRUE(results[5].met);
  // The single pass's 100 MB rows stream at 1.67 and 1.82 TB/s (60 and 55 us);
  // the 1 MB decode row is not a streaming row.
  const TargetResult& fused = results[6];
  EXPECT_EQ(fused.rows, 2);
  EXPECT_NEAR(fused.worst, 1e8 / 60.0 / 1e3 / 4000.0, 1e-9);
  EXPECT_FALSE(fused.met);
}

TEST(KernelTargets, AMissingCeilingIsNamed) {
  try {
    evaluate_kernel_targets(load_measurements(write_file("v41sim_targets_no_host", false).string()), kHeads);
    FAIL() << "a file without the host-link ceiling was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "host_to_device_gbps");
    EXPECT_NE(e.where().file.find("kernels.csv"), std::string::npos);
  }
}

}  // namespace
}  // namespace v41sim
