// Measurement files (validation/measurements/<gpu>/*.csv): one row per
// measured (kernel, shape), with a metadata header naming the GPU.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/graph/kernel.h"

namespace v41sim {

struct Measurement {
  std::string file;
  int line = 0;
  Kernel kernel;  // class, math, shape, FLOPs and bytes as the simulator counts them
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
};

struct MeasurementSet {
  std::map<std::string, std::string> metadata;  // from the first file; all files must name the same gpu
  std::vector<std::string> files;
  std::vector<std::string> file_hashes;  // FNV-1a of each file's bytes, for provenance
  std::vector<Measurement> rows;
};

// Reads every *.csv in `dir` (sorted by name). Throws InputError with file,
// line and column on a malformed row or a missing metadata field.
MeasurementSet load_measurements(const std::string& dir);

}  // namespace v41sim
