#include "sim/common/catalog.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "sim/common/input_error.h"

#ifndef V41SIM_SOURCE_DIR
#define V41SIM_SOURCE_DIR "."
#endif

namespace v41sim {
namespace fs = std::filesystem;
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The value of the top-level `name:` line, without parsing the whole file.
std::string declared_name(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("name:", 0) != 0) continue;
    std::string value = line.substr(5);
    value.erase(0, value.find_first_not_of(" \t\""));
    value.erase(value.find_last_not_of(" \t\"\r") + 1);
    return value;
  }
  return "";
}

}  // namespace

Catalog::Catalog(std::string data_dir) : data_dir_(std::move(data_dir)) {}

std::string Catalog::default_data_dir() {
  if (const char* env = std::getenv("V41SIM_DATA_DIR"); env != nullptr && *env != '\0') return env;
  return V41SIM_SOURCE_DIR;
}

std::vector<std::string> Catalog::yaml_files(const std::string& sub) const {
  std::vector<std::string> files;
  const fs::path dir = fs::path(data_dir_) / sub;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());  // deterministic order
  return files;
}

std::vector<std::string> Catalog::model_files() const { return yaml_files("models"); }
std::vector<std::string> Catalog::gpu_files() const { return yaml_files("hw_profiles"); }
std::vector<std::string> Catalog::deployment_files() const { return yaml_files("workloads/deployments"); }

std::string Catalog::resolve(const std::string& sub, const std::string& name_or_path,
                             const InputLocation& named_at) const {
  if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".yaml")) {
    if (!fs::exists(name_or_path)) throw InputError({name_or_path, 0, ""}, "no such file");
    return name_or_path;
  }
  const std::string wanted = lower(name_or_path);
  std::string known;
  for (const std::string& file : yaml_files(sub)) {
    const std::string stem = fs::path(file).stem().string();
    if (lower(stem) == wanted || lower(declared_name(file)) == wanted) return file;
    known += (known.empty() ? "" : ", ") + stem;
  }
  const std::string folder = (fs::path(data_dir_) / sub).string();
  if (known.empty()) {  // a --data-dir (or V41SIM_DATA_DIR) that is not the data folder
    throw InputError(named_at, "unknown name '" + name_or_path + "' (expected a path: " + folder +
                                   " holds no .yaml files; --data-dir names the folder that holds models/, "
                                   "hw_profiles/ and workloads/)");
  }
  throw InputError(named_at, "unknown name '" + name_or_path + "' (expected a path or one of: " + known +
                                 " in " + folder + ")");
}

std::string Catalog::resolve_model(const std::string& name_or_path, const InputLocation& named_at) const {
  return resolve("models", name_or_path, named_at);
}

std::string Catalog::resolve_gpu(const std::string& name_or_path, const InputLocation& named_at) const {
  return resolve("hw_profiles", name_or_path, named_at);
}

std::string Catalog::resolve_workload(const std::string& name_or_path, const InputLocation& named_at) const {
  return resolve("workloads", name_or_path, named_at);
}

std::string Catalog::resolve_deployment(const std::string& name_or_path,
                                        const InputLocation& named_at) const {
  return resolve("workloads/deployments", name_or_path, named_at);
}

std::string path_in_data_dir(const std::string& path, const std::string& data_dir) {
  namespace fs = std::filesystem;
  const fs::path inside =
      fs::path(path).lexically_normal().lexically_relative(fs::path(data_dir).lexically_normal());
  if (inside.empty() || *inside.begin() == "..") return path;
  return inside.string();
}

std::string message_in_data_dir(const InputError& error, const std::string& data_dir) {
  const InputLocation& where = error.where();
  const std::string file = where.file.empty() ? where.file : path_in_data_dir(where.file, data_dir);
  return InputError({file, where.line, where.field}, error.detail()).what();
}

}  // namespace v41sim
