#include "sim/hw/gpu_profile_loader.h"

namespace v41sim {

GpuProfile load_gpu_profile(const YamlNode& root) {
  root.expect_only({"name", "architecture", "notes", "sm_count", "boost_clock_ghz", "hbm_bytes",
                    "hbm_bytes_per_s", "l2_bytes", "tensor_tflops", "fp32_vector_tflops",
                    "nvlink_bytes_per_s", "nvlink_domain_gpus", "nic_bytes_per_s", "host_link_bytes_per_s",
                    "host_dram_bytes_per_node", "gpus_per_node", "power_watts", "price_usd_per_gpu_hour"});
  GpuProfile gpu;
  gpu.file = root.file();
  gpu.name = root.required("name").as_string();
  const YamlNode architecture = root.required("architecture");
  gpu.architecture = architecture.as_string();
  if (gpu.architecture != "hopper" && gpu.architecture != "blackwell") {
    architecture.fail("unknown architecture '" + gpu.architecture + "' (expected hopper or blackwell)");
  }
  auto field = [&root](const char* key) { return read_sourced_value(root.required(key)); };
  auto count = [&root](const char* key) {
    return read_sourced_value(root.required(key), ValueRange::kCount);
  };
  gpu.sm_count = count("sm_count");
  gpu.boost_clock_ghz = field("boost_clock_ghz");
  gpu.hbm_bytes = field("hbm_bytes");
  gpu.hbm_bytes_per_s = field("hbm_bytes_per_s");
  gpu.l2_bytes = field("l2_bytes");
  const YamlNode tensor = root.required("tensor_tflops");
  tensor.expect_only({"fp4", "fp8", "bf16"});
  gpu.tensor.fp4_tflops = read_sourced_value(tensor.required("fp4"));
  gpu.tensor.fp8_tflops = read_sourced_value(tensor.required("fp8"));
  gpu.tensor.bf16_tflops = read_sourced_value(tensor.required("bf16"));
  gpu.fp32_vector_tflops = field("fp32_vector_tflops");
  gpu.nvlink_bytes_per_s = field("nvlink_bytes_per_s");
  gpu.nvlink_domain_gpus = count("nvlink_domain_gpus");
  gpu.nic_bytes_per_s = field("nic_bytes_per_s");
  gpu.host_link_bytes_per_s = field("host_link_bytes_per_s");
  gpu.host_dram_bytes_per_node = field("host_dram_bytes_per_node");
  gpu.gpus_per_node = count("gpus_per_node");
  gpu.power_watts = field("power_watts");
  gpu.price_usd_per_gpu_hour = field("price_usd_per_gpu_hour");
  return gpu;
}

GpuProfile load_gpu_profile_file(const std::string& path) {
  return load_gpu_profile(YamlNode::load_file(path));
}

}  // namespace v41sim
