// Catalog: finds the bundled model and hardware files.
//
// A user names a model or GPU by file stem ("deepseek_v4_1_flash", "h200"),
// by the `name:` inside the file (case-insensitive), or by a path. Unknown
// names fail with the list of what is there.
#pragma once

#include <string>
#include <vector>

#include "sim/common/input_error.h"

namespace v41sim {

class Catalog {
 public:
  explicit Catalog(std::string data_dir);

  // Default data directory: $V41SIM_DATA_DIR, else the source tree it was built from.
  static std::string default_data_dir();

  std::vector<std::string> model_files() const;
  std::vector<std::string> gpu_files() const;
  std::vector<std::string> deployment_files() const;
  // An unknown name is reported where it was given: its flag, or a file's
  // field (a deployment's `gpu`, a validation probe's `model`).
  std::string resolve_model(const std::string& name_or_path,
                            const InputLocation& named_at = {"", 0, "--model"}) const;
  std::string resolve_gpu(const std::string& name_or_path,
                          const InputLocation& named_at = {"", 0, "--hw"}) const;
  std::string resolve_workload(const std::string& name_or_path,
                               const InputLocation& named_at = {"", 0, "--workload"}) const;
  std::string resolve_deployment(const std::string& name_or_path,
                                 const InputLocation& named_at = {"", 0, "--deployment"}) const;
  const std::string& data_dir() const { return data_dir_; }

 private:
  std::vector<std::string> yaml_files(const std::string& sub) const;
  std::string resolve(const std::string& sub, const std::string& name_or_path,
                      const InputLocation& named_at) const;
  std::string data_dir_;
};

// `path` relative to `data_dir` where it lies inside it, else as given: what
// outputs print, so a report says the same wherever the data folder sits.
std::string path_in_data_dir(const std::string& path, const std::string& data_dir);
// An input error's message with its file named as path_in_data_dir names it:
// what an output keeps of a variant it could not run.
std::string message_in_data_dir(const InputError& error, const std::string& data_dir);

}  // namespace v41sim
