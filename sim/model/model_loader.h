// Loads and validates a models/*.yaml file into a ModelSpec.
//
// Validation goes as far as deriving the layer plan, so a file that loads is
// a file every later stage can use; any problem is an InputError with file,
// line and field.
#pragma once

#include <string>

#include "sim/common/yaml_reader.h"
#include "sim/model/model_spec.h"

namespace v41sim {

ModelSpec load_model_file(const std::string& path);
ModelSpec load_model(const YamlNode& root);

}  // namespace v41sim
