// Loads and validates a models/*.yaml file into a ModelSpec.
//
// Validation goes as far as deriving the layer plan, so a file that loads is
// a file every later stage can use; any problem is an InputError with file,
// line and field.
#pragma once

#include <string>

#include "sim/common/catalog.h"
#include "sim/common/yaml_reader.h"
#include "sim/model/model_spec.h"

namespace v41sim {

ModelSpec load_model_file(const std::string& path);
// By name (models/) or path, its file named as path_in_data_dir names it, so
// outputs read the same wherever the data folder sits.
ModelSpec load_model_by_name(const Catalog& catalog, const std::string& name_or_path);
ModelSpec load_model(const YamlNode& root);

}  // namespace v41sim
