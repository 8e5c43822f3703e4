// Paths to the bundled files, for tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <initializer_list>
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

// A fresh data folder under the temp directory whose `linked` entries (paths
// relative to the data root, e.g. "models", "validation/published") are
// symlinks to the bundled ones; a test writes its own files beside them.
inline std::filesystem::path scratch_data_dir(const std::string& name,
                                              std::initializer_list<const char*> linked) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / name;
  fs::remove_all(root);
  fs::create_directories(root);
  for (const char* entry : linked) {
    fs::create_directories((root / entry).parent_path());
    fs::create_directory_symlink(fs::path(V41SIM_SOURCE_DIR) / entry, root / entry);
  }
  return root;
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
