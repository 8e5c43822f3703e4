// Paths to the bundled files, for tests.
#pragma once

#include <cstdint>
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

// A workload file of one-turn sessions, `input` tokens in and `output` out,
// arriving as `arrival` (a YAML flow map, e.g. "{process: closed_loop,
// concurrency: 4}", on the file's line 3), written as w.yaml in the temp
// folder `folder`; its path.
inline std::string one_turn_workload(const std::string& folder, const std::string& arrival, int64_t input,
                                     int64_t output) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / folder;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "w.yaml") << "name: loop\nsource: test\narrival: " << arrival
                                << "\nsession:\n  turns: {dist: fixed, value: 1}\n"
                                << "  first_input_tokens: {dist: fixed, value: " << input << "}\n"
                                << "  turn_input_tokens: {dist: fixed, value: 1}\n"
                                << "  output_tokens: {dist: fixed, value: " << output << "}\n"
                                << "  think_time_s: {dist: fixed, value: 1}\n  resumed: {fraction: 0}\n"
                                << "effort: high\n";
  return (dir / "w.yaml").string();
}

inline ModelAnalysis analyze(const std::string& stem) {
  return analyze_model(load_model_file(model_path(stem)));
}

}  // namespace v41sim::testing
