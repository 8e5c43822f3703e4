#include "sim/common/output_file.h"

#include <fstream>

#include "sim/common/input_error.h"

namespace v41sim {

void write_output_file(const std::string& path, const std::string& text, const std::string& flag) {
  std::ofstream file(path);
  file << text;
  file.flush();
  if (!file) throw InputError({path, 0, flag}, "cannot write this file");
}

}  // namespace v41sim
