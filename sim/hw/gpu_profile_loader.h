// Loads hw_profiles/*.yaml into a GpuProfile; every field must carry a source.
#pragma once

#include <string>

#include "sim/common/catalog.h"
#include "sim/common/yaml_reader.h"
#include "sim/hw/gpu_profile.h"

namespace v41sim {

GpuProfile load_gpu_profile_file(const std::string& path);
// By name (hw_profiles/) or path, named where `named_at` says, its file named
// as path_in_data_dir names it (outputs read the same wherever the data sits).
GpuProfile load_gpu_profile_by_name(const Catalog& catalog, const std::string& name_or_path,
                                    const InputLocation& named_at = {"", 0, "--hw"});
GpuProfile load_gpu_profile(const YamlNode& root);

}  // namespace v41sim
