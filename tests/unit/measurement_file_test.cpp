// The simulator reads exactly what the measuring harness writes (the harness's
// own row writer, not a copy of its format), and refuses rows whose derived
// rates disagree with their times: the sign of a hand-edited measurement.
#include "sim/validation/measurement_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "kernels/harness/csv_rows.h"
#include "sim/common/input_error.h"
#include "sim/hw/gpu_profile_loader.h"

namespace v41sim {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The metadata lines every measurement file needs.
const std::string kMetadata = "# gpu: x\n# sm_count: 1\n# driver: d\n# cuda: c\n# date: t\n# git_commit: g\n";

// The error loading `dir` raises; the test fails if `what` is accepted.
InputError load_error(const fs::path& dir, const std::string& what) {
  try {
    load_measurements(dir.string());
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << what << " was accepted";
  return InputError({"", 0, ""}, "accepted");
}

// A small file written through the harness's RowWriter.
void write_harness_file(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  const kernels::Ceilings ceilings{4000.0, 1200.0, 600.0, 50.0};
  const kernels::RowWriter w(fd, ceilings);
  for (const char* key : {"gpu", "sm_count", "driver", "cuda", "date", "git_commit"}) w.meta(key, "x");
  w.header();
  w.row({"sparse_attention_decode",
         "attention",
         "fp32",
         2048,
         640,
         1024,
         1,
         262144,
         2.7e9,
         1.4e7,
         {350.5, 349.0, 360.25}});
  w.row({"expert_down",
         "grouped_gemm",
         "fp8",
         512,
         5120,
         2304,
         1,
         0,
         1.2e10,
         1.4e7,
         {20.125, 19.5, 21.0},
         1.05e7,
         0.0,
         1.18e7,
         0.0,
         "128x64"});
  kernels::Row logits{"indexer_logits",  "indexer", "fp4", 64, 8192, 4096, 1, 0, 6.7e10, 2.1e7,
                      {40.0, 39.5, 41.0}};
  logits.folded_values = 2.6e8;  // 64 queries x 8,192 positions x 32 heads
  w.row(logits);
  ::close(fd);
}

TEST(MeasurementFile, ReadsWhatTheHarnessWrites) {
  const fs::path dir = fresh_dir("v41sim_harness_rows");
  write_harness_file(dir / "kernels.csv");
  const MeasurementSet set = load_measurements(dir.string());
  ASSERT_EQ(set.rows.size(), 3u);
  const Measurement& decode = set.rows[0];
  EXPECT_EQ(decode.kernel.name, "sparse_attention_decode");
  EXPECT_EQ(decode.kernel.kernel_class, KernelClass::kAttention);
  EXPECT_EQ(decode.kernel.shape.m, 2048);
  EXPECT_EQ(decode.kernel.shape.k, 1024);
  EXPECT_EQ(decode.context, 262144);
  EXPECT_DOUBLE_EQ(decode.median_us, 350.5);
  EXPECT_DOUBLE_EQ(decode.max_us, 360.25);
  EXPECT_EQ(set.rows[1].kernel.math, MathType::kFp8);
  EXPECT_EQ(set.rows[1].context, 0);
  EXPECT_EQ(decode.kernel.tiling, Tiling{});  // the class's rule
  EXPECT_EQ(set.rows[1].kernel.tiling, (Tiling{Tiling::Rule::kFixed, 128, 64}));
  EXPECT_DOUBLE_EQ(decode.kernel.epilogue_bytes, 0.0);
  EXPECT_DOUBLE_EQ(set.rows[1].kernel.epilogue_bytes, 1.05e7);  // as the harness counted it
  EXPECT_EQ(decode.kernel.narrow, NarrowValues{});
  EXPECT_DOUBLE_EQ(set.rows[1].kernel.narrow.fp4, 1.18e7);  // FP4 weights, widened for FP8 math
  EXPECT_DOUBLE_EQ(set.rows[1].kernel.narrow.fp8, 0.0);
  EXPECT_DOUBLE_EQ(decode.kernel.folded_values, 0.0);
  EXPECT_DOUBLE_EQ(set.rows[2].kernel.folded_values, 2.6e8);  // the indexer's ReLU and head weights
}

// A negative count of narrow or folded values is refused at its line and column.
TEST(MeasurementFile, ValueCountsAreChecked) {
  const std::pair<std::string, std::string> columns_and_cells[] = {
      {"narrow_fp8_values,narrow_fp4_values", "10,-1"}, {"folded_values", "-1"}};
  for (const auto& [columns, cells] : columns_and_cells) {
    const fs::path dir = fresh_dir("v41sim_harness_counts");
    std::ofstream(dir / "a.csv") << kMetadata
                                 << "kernel,class,math,m,n,k,batch,flops,hbm_bytes,median_us,min_us,max_us,"
                                 << columns << "\n"
                                 << "a,indexer,fp4,64,640,4096,1,1e9,1e6,5,5,5," << cells << "\n";
    const InputError e = load_error(dir, "a negative count");
    EXPECT_EQ(e.where().line, 8);
    EXPECT_EQ(e.where().field, columns.substr(columns.rfind(',') + 1));
  }
}

// Without the column, GEMM rows take the simulator's convention (BF16 output,
// m x n per group); an epilogue larger than the row's bytes is refused.
TEST(MeasurementFile, EpilogueBytesAreReadOrDerivedAndChecked) {
  const fs::path dir = fresh_dir("v41sim_harness_epilogue");
  std::ofstream(dir / "a.csv")
      << kMetadata << "kernel,class,math,m,n,k,batch,flops,hbm_bytes,median_us,min_us,max_us\n"
      << "g,gemm,fp8,64,128,256,2,1e7,1e6,5,5,5\ns,elementwise,fp32,64,128,1,1,0,1e6,5,5,5\n";
  const MeasurementSet set = load_measurements(dir.string());
  EXPECT_DOUBLE_EQ(set.rows[0].kernel.epilogue_bytes, 64.0 * 128.0 * 2.0 * 2.0);
  EXPECT_DOUBLE_EQ(set.rows[1].kernel.epilogue_bytes, 0.0);
  std::ofstream(dir / "a.csv")
      << kMetadata << "kernel,class,math,m,n,k,batch,flops,hbm_bytes,median_us,min_us,max_us,epilogue_bytes\n"
      << "g,gemm,fp8,64,128,256,2,1e7,1e6,5,5,5,2e6\n";
  const InputError e = load_error(dir, "an epilogue larger than the row's bytes");
  EXPECT_EQ(e.where().line, 8);
  EXPECT_EQ(e.where().field, "epilogue_bytes");
}

// A GEMM row's operands as its tiles load them: activations in the math's
// format, the weights' bytes per value what the row's bytes leave for them;
// a row whose bytes do not cover activations, output and weights is refused.
TEST(MeasurementFile, GemmOperandsAreDerivedFromTheRowsBytes) {
  const fs::path dir = fresh_dir("v41sim_harness_operands");
  const std::string header = "kernel,class,math,m,n,k,batch,flops,hbm_bytes,median_us,min_us,max_us\n";
  // 2 groups: activations 2 x 64 x 256 B, output 2 x 64 x 128 x 2 B, FP4 weights 2 x 128 x 256 x 0.5 B.
  const double activations = 2.0 * 64 * 256, output = 2.0 * 64 * 128 * 2, weights = 2.0 * 128 * 256 * 0.5;
  std::ofstream(dir / "a.csv") << kMetadata << header
                               << fmt::format("g,grouped_gemm,fp8,64,128,256,2,1e7,{},5,5,5\n",
                                              activations + output + weights);
  const MeasurementSet set = load_measurements(dir.string());
  EXPECT_DOUBLE_EQ(set.rows[0].kernel.operands.row_bytes, 1.0);
  EXPECT_DOUBLE_EQ(set.rows[0].kernel.operands.column_bytes, 0.5);
  std::ofstream(dir / "a.csv") << kMetadata << header
                               << fmt::format("g,gemm,bf16,64,128,256,2,1e7,{},5,5,5\n",
                                              activations + output);
  const InputError e = load_error(dir, "a GEMM row with no bytes left for its weights");
  EXPECT_EQ(e.where().line, 8);
  EXPECT_EQ(e.where().field, "hbm_bytes");
  EXPECT_NE(std::string(e.what()).find("expected more than"), std::string::npos) << e.what();
}

// A row's tiling: the class's rule, cuBLASLt's split, or fixed tiles; anything
// else is refused at its line.
TEST(MeasurementFile, TilingIsReadAndChecked) {
  const fs::path dir = fresh_dir("v41sim_harness_tiling");
  const std::string header = "kernel,class,math,m,n,k,batch,flops,hbm_bytes,median_us,min_us,max_us,tiling\n";
  std::ofstream(dir / "a.csv") << kMetadata << header << "g,gemm,fp8,64,128,256,2,1e7,1e6,5,5,5,split\n"
                               << "h,gemm,fp8,64,128,256,2,1e7,1e6,5,5,5,16x64\n";
  const MeasurementSet set = load_measurements(dir.string());
  EXPECT_EQ(set.rows[0].kernel.tiling.rule, Tiling::Rule::kSplit);
  EXPECT_EQ(set.rows[1].kernel.tiling, (Tiling{Tiling::Rule::kFixed, 16, 64}));
  for (const char* bad : {"16x", "x64", "0x64", "16x64x2", "narrow"}) {
    std::ofstream(dir / "a.csv") << kMetadata << header << "g,gemm,fp8,64,128,256,2,1e7,1e6,5,5,5," << bad
                                 << "\n";
    const InputError e = load_error(dir, std::string("tiling '") + bad + "'");
    EXPECT_EQ(e.where().line, 8) << bad;
    EXPECT_EQ(e.where().field, "tiling") << bad;
  }
}

TEST(MeasurementFile, AnEditedTimeNoLongerMatchesItsRates) {
  const fs::path dir = fresh_dir("v41sim_harness_edited");
  write_harness_file(dir / "kernels.csv");
  std::stringstream text;
  text << std::ifstream(dir / "kernels.csv").rdbuf();
  std::string edited = text.str();
  const std::size_t at = edited.find(",350.500,");
  ASSERT_NE(at, std::string::npos);
  edited.replace(at, 9, ",300.500,");
  std::ofstream(dir / "kernels.csv") << edited;
  const InputError e = load_error(dir, "an edited median");
  EXPECT_EQ(e.where().line, 8);
  EXPECT_EQ(e.where().field, "achieved_gbps");
}

TEST(MeasurementFile, UnknownOrMissingColumnsAreNamed) {
  const fs::path dir = fresh_dir("v41sim_harness_columns");
  std::ofstream(dir / "a.csv")
      << kMetadata << "kernel,class,math,m,n,k,batch,flops,hbm_bytes,median_us,min_us,max_us,speed\n";
  {
    const InputError e = load_error(dir, "an unknown column");
    EXPECT_EQ(e.where().line, 7);
    EXPECT_NE(std::string(e.what()).find("'speed' is unknown"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "a.csv") << kMetadata
                               << "kernel,class,math,m,n,k,batch,flops,median_us,min_us,max_us\n";
  {
    const InputError e = load_error(dir, "a file without hbm_bytes");
    EXPECT_NE(std::string(e.what()).find("no 'hbm_bytes' column"), std::string::npos) << e.what();
  }
}

// The GPU model in a CUDA device's name and in our profiles' names: the
// word of one or two capitals and two to four digits.
TEST(MeasurementFile, GpuModelWordsOfDevicesAndProfiles) {
  EXPECT_EQ(gpu_model_word("NVIDIA H100 80GB HBM3"), "H100");  // as the lent H100 names itself
  EXPECT_EQ(gpu_model_word("NVIDIA H200"), "H200");            // and the lent H200
  EXPECT_EQ(gpu_model_word("NVIDIA H20 96GB"), "H20");
  EXPECT_EQ(gpu_model_word("NVIDIA H800 SXM5 80GB"), "H800");
  EXPECT_EQ(gpu_model_word("NVIDIA GB200 NVL72 (per GPU)"), "GB200");
  EXPECT_EQ(gpu_model_word("NVIDIA B200 (HGX, 1000 W)"), "B200");
  EXPECT_EQ(gpu_model_word("synthetic"), "");
}

// Measurements are refused by every profile but their own GPU's: an H100's
// file in a folder named h200 would otherwise fit H200's profile; so are an
// H100 PCIe's (114 SMs, NVIDIA's Hopper whitepaper) by the SXM part's profile. The error names the file
// and the metadata line that differs.
TEST(MeasurementFile, OnlyTheirOwnGpusProfileTakesTheMeasurements) {
  const auto profile = [](const std::string& stem) {
    return load_gpu_profile_file(std::string(V41SIM_SOURCE_DIR) + "/hw_profiles/" + stem + ".yaml");
  };
  const auto measured_on = [](const std::string& device, int sms) {
    const fs::path dir = fresh_dir("v41sim_measured_on");
    std::ofstream(dir / "kernels.csv") << fmt::format(
        "# sm_count: {}\n# gpu: {}\n# driver: d\n# cuda: c\n# date: t\n# git_commit: g\n"
        "kernel,class,math,m,n,k,batch,flops,hbm_bytes,median_us,min_us,max_us\n"
        "stream,elementwise,fp32,256,4096,1,1,0,1048576,3.3,3.3,3.3\n",
        sms, device);
    return load_measurements(dir.string());
  };
  const auto refusal = [&](const MeasurementSet& set, const std::string& stem) {
    try {
      require_measured_on(set, stem, profile(stem));
    } catch (const InputError& e) {
      return e;
    }
    ADD_FAILURE() << stem << " took measurements of " << set.metadata.at("gpu");
    return InputError({}, "");
  };
  const MeasurementSet h100 = measured_on("NVIDIA H100 80GB HBM3", 132);
  EXPECT_NO_THROW(require_measured_on(h100, "h100_sxm", profile("h100_sxm")));
  for (const std::string stem : {"h200", "h800", "h20"}) {
    const InputError e = refusal(h100, stem);
    EXPECT_EQ(e.where().line, 2);
    EXPECT_EQ(e.where().field, "gpu");
    EXPECT_NE(std::string(e.what()).find("measured on 'NVIDIA H100 80GB HBM3' (model H100), but these files "
                                         "would calibrate the profile " +
                                         stem),
              std::string::npos)
        << e.what();
  }
  const InputError pcie = refusal(measured_on("NVIDIA H100 PCIe", 114), "h100_sxm");
  EXPECT_EQ(pcie.where().line, 1);
  EXPECT_EQ(pcie.where().field, "sm_count");
  EXPECT_NE(std::string(pcie.what()).find("a device of 114 SMs, but the profile h100_sxm"), std::string::npos)
      << pcie.what();
}

}  // namespace
}  // namespace v41sim
