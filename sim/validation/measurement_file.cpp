#include "sim/validation/measurement_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/common/content_hash.h"
#include "sim/common/input_error.h"
#include "sim/graph/kernel_factory.h"

namespace v41sim {
namespace {

const std::vector<std::string> kRequired{"kernel", "class", "math",      "m",         "n",      "k",
                                         "batch",  "flops", "hbm_bytes", "median_us", "min_us", "max_us"};
const std::vector<std::string> kOptional{"context",
                                         "achieved_gbps",
                                         "achieved_tflops",
                                         "fraction_of_copy",
                                         "fraction_of_compute_ceiling",
                                         "epilogue_bytes",
                                         "narrow_fp8_values",
                                         "narrow_fp4_values",
                                         "folded_values",
                                         "tiling"};
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

// Column name -> position; every required column present, nothing unknown.
std::map<std::string, std::size_t> read_header(const std::vector<std::string>& cells,
                                               const InputLocation& at) {
  std::map<std::string, std::size_t> columns;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const bool known = std::find(kRequired.begin(), kRequired.end(), cells[i]) != kRequired.end() ||
                       std::find(kOptional.begin(), kOptional.end(), cells[i]) != kOptional.end();
    if (!known || columns.count(cells[i])) {
      throw InputError(at, fmt::format("column '{}' is {}; expected {} and optionally {}", cells[i],
                                       known ? "repeated" : "unknown", fmt::join(kRequired, ","),
                                       fmt::join(kOptional, ",")));
    }
    columns[cells[i]] = i;
  }
  for (const std::string& name : kRequired) {
    if (!columns.count(name)) throw InputError(at, "the header has no '" + name + "' column");
  }
  return columns;
}

// A derived rate the harness wrote must match the row's own figures (to the
// printed precision): a time edited by hand would leave it behind.
void check_derived(const std::map<std::string, std::size_t>& columns, const std::vector<std::string>& cells,
                   const std::string& name, double expected, const InputLocation& at) {
  const auto column = columns.find(name);
  if (column == columns.end()) return;
  const double written = parse_number(cells[column->second], at);
  if (std::abs(written - expected) > 0.002 * std::abs(expected) + 0.002) {
    throw InputError(at, fmt::format("{} is {}, but the row's own figures give {:.4g}: the file was changed "
                                     "after it was measured",
                                     name, cells[column->second], expected));
  }
}

// "class", "split" or "MxN" (fixed tiles), as the harness writes them (csv_rows.h).
Tiling parse_tiling(const std::string& text, const InputLocation& where) {
  if (text == "class") return {};
  if (text == "split") return {Tiling::Rule::kSplit, 0, 0};
  int64_t m = 0, n = 0;
  char x = 0, extra = 0;
  if (std::sscanf(text.c_str(), "%" SCNd64 "%c%" SCNd64 "%c", &m, &x, &n, &extra) == 3 && x == 'x' && m > 0 &&
      n > 0) {
    return {Tiling::Rule::kFixed, m, n};
  }
  throw InputError(where, "unknown tiling '" + text + "' (expected class, split or a tile like 64x128)");
}

// A GEMM row's operands as its tiles load them: the row operand in the math's
// input format; the weights' bytes per value (scales included) are what is
// left of hbm_bytes after the activations and the output, as the harness counts them.
GemmOperands gemm_operands_of(const Kernel& k, const InputLocation& where) {
  const auto& s = k.shape;
  const double row_bytes = gemm_row_operand_bytes(k.math);
  const double groups = static_cast<double>(s.batch);
  const double weights = static_cast<double>(s.n) * static_cast<double>(s.k) * groups;
  const double activations = static_cast<double>(s.m) * static_cast<double>(s.k) * groups * row_bytes;
  const double left = k.hbm_bytes - k.epilogue_bytes - activations;
  if (left <= 0) {
    throw InputError(where,
                     fmt::format("a GEMM's bytes hold its activations ({:.0f} B) and output ({:.0f} B) "
                                 "and its weights: expected more than {:.0f}",
                                 activations, k.epilogue_bytes, activations + k.epilogue_bytes));
  }
  return {row_bytes, left / weights};
}

Measurement read_row(const std::vector<std::string>& cells, const std::map<std::string, std::size_t>& columns,
                     const std::string& path, int number) {
  auto at = [&](const std::string& name) { return InputLocation{path, number, name}; };
  auto text = [&](const std::string& name) -> const std::string& { return cells[columns.at(name)]; };
  auto number_of = [&](const std::string& name) { return parse_number(text(name), at(name)); };
  auto count_of = [&](const std::string& name) { return static_cast<int64_t>(number_of(name)); };
  Measurement m;
  m.file = path;
  m.line = number;
  m.kernel.name = text("kernel");
  m.kernel.kernel_class = parse_class(text("class"), at("class"));
  m.kernel.math = parse_math(text("math"), at("math"));
  m.kernel.shape = {count_of("m"), count_of("n"), count_of("k"), count_of("batch")};
  m.kernel.flops = number_of("flops");
  m.kernel.hbm_bytes = number_of("hbm_bytes");
  m.median_us = number_of("median_us");
  m.min_us = number_of("min_us");
  m.max_us = number_of("max_us");
  if (m.median_us <= 0) throw InputError(at("median_us"), "a measured time must be positive");
  if (columns.count("context")) m.context = count_of("context");
  // The output a GEMM's epilogue writes: as the harness counted it, or else the
  // simulator's convention (BF16 outputs, m x n per group).
  if (columns.count("epilogue_bytes")) {
    m.kernel.epilogue_bytes = number_of("epilogue_bytes");
  } else if (m.kernel.kernel_class == KernelClass::kGemm ||
             m.kernel.kernel_class == KernelClass::kGroupedGemm) {
    const KernelShape& s = m.kernel.shape;
    m.kernel.epilogue_bytes =
        gemm_epilogue_bytes(static_cast<double>(s.m), static_cast<double>(s.n), static_cast<double>(s.batch));
  }
  if (m.kernel.epilogue_bytes > m.kernel.hbm_bytes) {
    throw InputError(at("epilogue_bytes"), "the epilogue's output is part of hbm_bytes: at most that");
  }
  if (m.kernel.kernel_class == KernelClass::kGemm || m.kernel.kernel_class == KernelClass::kGroupedGemm) {
    m.kernel.operands = gemm_operands_of(m.kernel, at("hbm_bytes"));
  }
  // The tiles the kernel ran, where the harness knows them; files without the column take the class's rule.
  if (columns.count("tiling")) m.kernel.tiling = parse_tiling(text("tiling"), at("tiling"));
  // Values taken from FP8 / FP4 storage (the cost model's widening); files
  // written before the harness counted them widen nothing.
  if (columns.count("narrow_fp8_values")) m.kernel.narrow.fp8 = number_of("narrow_fp8_values");
  if (columns.count("narrow_fp4_values")) m.kernel.narrow.fp4 = number_of("narrow_fp4_values");
  if (m.kernel.narrow.fp8 < 0 || m.kernel.narrow.fp4 < 0) {
    throw InputError(at(m.kernel.narrow.fp8 < 0 ? "narrow_fp8_values" : "narrow_fp4_values"),
                     "a count of values: expected zero or more");
  }
  // Accumulator values folded on the CUDA cores (the indexer's); files written
  // before the harness counted them fold nothing.
  if (columns.count("folded_values")) m.kernel.folded_values = number_of("folded_values");
  if (m.kernel.folded_values < 0)
    throw InputError(at("folded_values"), "a count of values: expected zero or more");
  // A host copy's bytes are the bytes that cross the host link (the model times it there).
  if (m.kernel.kernel_class == KernelClass::kHostCopy) {
    m.kernel.link_bytes = m.kernel.hbm_bytes;
    m.kernel.stream = Stream::kHostCopy;
  }
  check_derived(columns, cells, "achieved_gbps", m.kernel.hbm_bytes / m.median_us / 1e3, at("achieved_gbps"));
  check_derived(columns, cells, "achieved_tflops", m.kernel.flops / m.median_us / 1e6, at("achieved_tflops"));
  return m;
}

void read_file(const std::string& path, MeasurementSet& set) {
  std::ifstream in(path);
  if (!in) throw InputError({path, 0, ""}, "cannot open file");
  std::stringstream whole;
  whole << in.rdbuf();
  set.file_hashes.push_back(fnv1a_hex(whole.str()));
  std::map<std::string, std::string> metadata;
  std::map<std::string, int> metadata_lines;
  std::map<std::string, std::size_t> columns;
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
      metadata_lines[key] = number;
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    if (!header) {
      columns = read_header(cells, {path, number, ""});
      for (const std::string& key : kRequiredMetadata) {
        if (!metadata.count(key))
          throw InputError({path, number, key}, "metadata line '# " + key + ": ...' is missing");
      }
      header = true;
      continue;
    }
    if (cells.size() != columns.size()) {
      throw InputError({path, number, ""},
                       fmt::format("expected {} columns, got {}", columns.size(), cells.size()));
    }
    set.rows.push_back(read_row(cells, columns, path, number));
  }
  if (!header) throw InputError({path, 0, ""}, "no header line");
  if (set.metadata.empty()) {
    set.metadata = metadata;
    set.metadata_lines = metadata_lines;
  } else if (set.metadata["gpu"] != metadata["gpu"]) {
    throw InputError({path, 0, "gpu"}, "measured on '" + metadata["gpu"] + "', but " + set.files.front() +
                                           " names '" + set.metadata["gpu"] + "'");
  }
  set.files.push_back(path);
}

}  // namespace

MeasurementSet load_measurements(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::exists(dir)) {
    throw InputError({dir, 0, "--measurements"},
                     "no such folder: the measuring harness writes one per GPU, on that GPU (make measure "
                     "GPU=<gpu>; validation/measurements/README.md)");
  }
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

std::string gpu_model_word(const std::string& name) {
  std::istringstream words(name);
  for (std::string word; words >> word;) {
    std::size_t letters = 0;
    while (letters < word.size() && std::isupper(static_cast<unsigned char>(word[letters]))) ++letters;
    const std::size_t digits = word.size() - letters;
    const bool all_digits = std::all_of(word.begin() + static_cast<std::ptrdiff_t>(letters), word.end(),
                                        [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (letters >= 1 && letters <= 2 && digits >= 2 && digits <= 4 && all_digits) return word;
  }
  return "";
}

void require_measured_on(const MeasurementSet& set, const std::string& profile_stem, const GpuProfile& gpu) {
  const auto at = [&](const std::string& key) {
    const auto line = set.metadata_lines.find(key);
    return InputLocation{set.files.empty() ? "" : set.files.front(),
                         line == set.metadata_lines.end() ? 0 : line->second, key};
  };
  const auto metadata = [&](const std::string& key) {
    return set.metadata.count(key) ? set.metadata.at(key) : std::string();
  };
  const std::string device = metadata("gpu");
  const std::string measured = gpu_model_word(device), profile = gpu_model_word(gpu.name);
  if (measured.empty() || measured != profile) {
    throw InputError(
        at("gpu"),
        fmt::format("measured on '{}'{}, but these files would calibrate the profile {} ('{}'): keep each "
                    "GPU's files in validation/measurements/<its profile>/ (measure_on_device.sh picks the "
                    "folder from the device), or name the profile with --hw",
                    device, measured.empty() ? " (no GPU model in the name)" : " (model " + measured + ")",
                    profile_stem, gpu.name));
  }
  const std::string sms = metadata("sm_count");
  if (sms != fmt::format("{}", gpu.sm_count.value())) {
    throw InputError(at("sm_count"),
                     fmt::format("measured on a device of {} SMs, but the profile {} ('{}') has "
                                 "{}: another part of the {} than the profile's",
                                 sms, profile_stem, gpu.name, gpu.sm_count.value(), profile));
  }
}

std::vector<std::string> measured_gpu_dirs(const std::string& data_dir) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(data_dir) / "validation" / "measurements";
  std::vector<std::string> dirs;
  if (!fs::is_directory(root)) return dirs;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (!entry.is_directory()) continue;
    for (const auto& file : fs::directory_iterator(entry.path())) {
      if (file.path().extension() == ".csv") {
        dirs.push_back(entry.path().string());
        break;
      }
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

}  // namespace v41sim
