#include "sim/hw/gpu_profile_loader.h"

namespace v41sim {
namespace {

// Each figure's plausible range (sourced_value.h): a decade or more past every
// bundled profile either way.
constexpr PlausibleRange kSms{8, 2000, "SMs"};
constexpr PlausibleRange kHbmBytes{4e9, 1e13, "bytes (141 GB is 141e9)"};
constexpr PlausibleRange kHbmBytesPerS{1e11, 1e15, "bytes per second (4.8 TB/s is 4.8e12)"};
constexpr PlausibleRange kL2Bytes{1e5, 1e10, "bytes (50 MB is 50e6)"};
constexpr PlausibleRange kTensorTflops{1, 1e6, "dense TFLOP/s (989 TFLOP/s is 989)"};
constexpr PlausibleRange kVectorTflops{0.1, 1e5, "TFLOP/s"};
constexpr PlausibleRange kLinkBytesPerS{1e9, 1e14, "bytes per second, one direction (450 GB/s is 450e9)"};
constexpr PlausibleRange kNicBytesPerS{1e8, 1e13, "bytes per second, one direction (400 Gb/s is 50e9)"};
constexpr PlausibleRange kDomainGpus{1, 100000, "GPUs"};
constexpr PlausibleRange kNodeGpus{1, 1000, "GPUs"};
constexpr PlausibleRange kDramBytes{1e9, 1e15, "bytes (2 TB is 2e12)"};
constexpr PlausibleRange kWatts{10, 1e5, "W"};
constexpr PlausibleRange kUsdPerHour{0.01, 1000, "$ per GPU-hour"};

}  // namespace

GpuProfile load_gpu_profile(const YamlNode& root) {
  root.expect_only({"name", "architecture", "notes", "sm_count", "hbm_bytes", "hbm_bytes_per_s", "l2_bytes",
                    "tensor_tflops", "fp32_vector_tflops", "nvlink_bytes_per_s", "nvlink_domain_gpus",
                    "nic_bytes_per_s", "host_link_bytes_per_s", "host_dram_bytes_per_node", "gpus_per_node",
                    "power_watts", "price_usd_per_gpu_hour"});
  GpuProfile gpu;
  gpu.file = root.file();
  gpu.name = root.required("name").as_string();
  const YamlNode architecture = root.required("architecture");
  gpu.architecture = architecture.as_string();
  if (gpu.architecture != "hopper" && gpu.architecture != "blackwell") {
    architecture.fail("unknown architecture '" + gpu.architecture + "' (expected hopper or blackwell)");
  }
  auto field = [&root](const char* key, const PlausibleRange& range) {
    return read_plausible_value(root.required(key), range, ValueRange::kPositive);
  };
  auto count = [&root](const char* key, const PlausibleRange& range) {
    return read_plausible_value(root.required(key), range, ValueRange::kCount);
  };
  gpu.sm_count = count("sm_count", kSms);
  gpu.hbm_bytes = field("hbm_bytes", kHbmBytes);
  gpu.hbm_bytes_per_s = field("hbm_bytes_per_s", kHbmBytesPerS);
  gpu.l2_bytes = field("l2_bytes", kL2Bytes);
  const YamlNode tensor = root.required("tensor_tflops");
  tensor.expect_only({"fp4", "fp8", "bf16"});
  const auto tensor_rate = [&tensor](const char* dtype) {
    return read_plausible_value(tensor.required(dtype), kTensorTflops);
  };
  gpu.tensor.fp4_tflops = tensor_rate("fp4");
  gpu.tensor.fp8_tflops = tensor_rate("fp8");
  gpu.tensor.bf16_tflops = tensor_rate("bf16");
  gpu.fp32_vector_tflops = field("fp32_vector_tflops", kVectorTflops);
  gpu.nvlink_bytes_per_s = field("nvlink_bytes_per_s", kLinkBytesPerS);
  gpu.nvlink_domain_gpus = count("nvlink_domain_gpus", kDomainGpus);
  gpu.nic_bytes_per_s = field("nic_bytes_per_s", kNicBytesPerS);
  gpu.host_link_bytes_per_s = field("host_link_bytes_per_s", kLinkBytesPerS);
  gpu.host_dram_bytes_per_node = field("host_dram_bytes_per_node", kDramBytes);
  gpu.gpus_per_node = count("gpus_per_node", kNodeGpus);
  gpu.power_watts = field("power_watts", kWatts);
  gpu.price_usd_per_gpu_hour = field("price_usd_per_gpu_hour", kUsdPerHour);
  return gpu;
}

GpuProfile load_gpu_profile_file(const std::string& path) {
  return load_gpu_profile(YamlNode::load_file(path));
}

GpuProfile load_gpu_profile_by_name(const Catalog& catalog, const std::string& name_or_path,
                                    const InputLocation& named_at) {
  GpuProfile gpu = load_gpu_profile_file(catalog.resolve_gpu(name_or_path, named_at));
  gpu.file = path_in_data_dir(gpu.file, catalog.data_dir());
  return gpu;
}

}  // namespace v41sim
