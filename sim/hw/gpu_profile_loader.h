// Loads hw_profiles/*.yaml into a GpuProfile; every field must carry a source.
#pragma once

#include <string>

#include "sim/common/yaml_reader.h"
#include "sim/hw/gpu_profile.h"

namespace v41sim {

GpuProfile load_gpu_profile_file(const std::string& path);
GpuProfile load_gpu_profile(const YamlNode& root);

}  // namespace v41sim
