// Paths to the bundled files, for tests.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "sim/model/model_analysis.h"
#include "sim/model/model_loader.h"

namespace v41sim::testing {

inline std::string model_path(const std::string& stem) {
  return std::string(V41SIM_SOURCE_DIR) + "/models/" + stem + ".yaml";
}

inline std::string gpu_path(const std::string& stem) {
  return std::string(V41SIM_SOURCE_DIR) + "/hw_profiles/" + stem + ".yaml";
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline ModelAnalysis analyze(const std::string& stem) {
  return analyze_model(load_model_file(model_path(stem)));
}

}  // namespace v41sim::testing
