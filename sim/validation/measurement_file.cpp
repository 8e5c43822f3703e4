#include "sim/validation/measurement_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/common/input_error.h"

namespace v41sim {
namespace {

const std::vector<std::string> kColumns{"kernel", "class", "math",      "m",         "n",      "k",
                                        "batch",  "flops", "hbm_bytes", "median_us", "min_us", "max_us"};
const std::vector<std::string> kRequiredMetadata{"gpu", "sm_count", "driver", "cuda", "date", "git_commit"};

KernelClass parse_class(const std::string& text, const InputLocation& at) {
  for (int i = 0; i < kKernelClassCount; ++i) {
    if (class_key(static_cast<KernelClass>(i)) == text) return static_cast<KernelClass>(i);
  }
  throw InputError(at, "unknown kernel class '" + text + "'");
}

MathType parse_math(const std::string& text, const InputLocation& at) {
  for (MathType m : {MathType::kBf16, MathType::kFp8, MathType::kFp4, MathType::kFp32}) {
    if (math_name(m) == text) return m;
  }
  throw InputError(at, "unknown math '" + text + "' (expected bf16, fp8, fp4, fp32)");
}

double parse_number(const std::string& text, const InputLocation& at) {
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size() && value >= 0) return value;
  } catch (const std::exception&) {
  }
  throw InputError(at, "expected a non-negative number, got '" + text + "'");
}

std::string fnv1a(const std::string& bytes) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

void read_file(const std::string& path, MeasurementSet& set) {
  std::ifstream in(path);
  if (!in) throw InputError({path, 0, ""}, "cannot open file");
  std::stringstream whole;
  whole << in.rdbuf();
  set.file_hashes.push_back(fnv1a(whole.str()));
  std::map<std::string, std::string> metadata;
  bool header = false;
  std::string line;
  std::istringstream lines(whole.str());
  for (int number = 1; std::getline(lines, line); ++number) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      const std::size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string key = line.substr(1, colon - 1);
      std::string value = line.substr(colon + 1);
      key.erase(0, key.find_first_not_of(' '));
      key.erase(key.find_last_not_of(' ') + 1);
      value.erase(0, value.find_first_not_of(' '));
      metadata[key] = value;
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    if (!header) {
      if (cells != kColumns) {
        throw InputError({path, number, ""},
                         "expected the header " + fmt::format("{}", fmt::join(kColumns, ",")));
      }
      for (const std::string& key : kRequiredMetadata) {
        if (!metadata.count(key))
          throw InputError({path, number, key}, "metadata line '# " + key + ": ...' is missing");
      }
      header = true;
      continue;
    }
    if (cells.size() != kColumns.size()) {
      throw InputError({path, number, ""},
                       fmt::format("expected {} columns, got {}", kColumns.size(), cells.size()));
    }
    auto at = [&](std::size_t c) { return InputLocation{path, number, kColumns[c]}; };
    Measurement m;
    m.file = path;
    m.line = number;
    m.kernel.name = cells[0];
    m.kernel.kernel_class = parse_class(cells[1], at(1));
    m.kernel.math = parse_math(cells[2], at(2));
    m.kernel.shape = {static_cast<int64_t>(parse_number(cells[3], at(3))),
                      static_cast<int64_t>(parse_number(cells[4], at(4))),
                      static_cast<int64_t>(parse_number(cells[5], at(5))),
                      static_cast<int64_t>(parse_number(cells[6], at(6)))};
    m.kernel.flops = parse_number(cells[7], at(7));
    m.kernel.hbm_bytes = parse_number(cells[8], at(8));
    m.median_us = parse_number(cells[9], at(9));
    m.min_us = parse_number(cells[10], at(10));
    m.max_us = parse_number(cells[11], at(11));
    if (m.median_us <= 0) throw InputError(at(9), "a measured time must be positive");
    set.rows.push_back(m);
  }
  if (!header) throw InputError({path, 0, ""}, "no header line");
  if (set.metadata.empty()) {
    set.metadata = metadata;
  } else if (set.metadata["gpu"] != metadata["gpu"]) {
    throw InputError({path, 0, "gpu"}, "measured on '" + metadata["gpu"] + "', but " + set.files.front() +
                                           " names '" + set.metadata["gpu"] + "'");
  }
  set.files.push_back(path);
}

}  // namespace

MeasurementSet load_measurements(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) throw InputError({dir, 0, "--measurements"}, "not a directory");
  std::vector<std::string> paths;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".csv") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) throw InputError({dir, 0, "--measurements"}, "no .csv measurement files");
  MeasurementSet set;
  for (const std::string& path : paths) read_file(path, set);
  return set;
}

}  // namespace v41sim
