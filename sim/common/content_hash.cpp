#include "sim/common/content_hash.h"

#include <fmt/format.h>

#include <cstdint>
#include <fstream>
#include <sstream>

#include "sim/common/input_error.h"

namespace v41sim {

std::string fnv1a_hex(const std::string& bytes) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

std::string file_fnv1a_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, ""}, "cannot read the file");
  std::stringstream whole;
  whole << in.rdbuf();
  return fnv1a_hex(whole.str());
}

}  // namespace v41sim
