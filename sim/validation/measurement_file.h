// Measurement files (validation/measurements/<gpu>/*.csv): one row per
// measured (kernel, shape), with a metadata header naming the GPU.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/graph/kernel.h"
#include "sim/hw/gpu_profile.h"

namespace v41sim {

struct Measurement {
  std::string file;
  int line = 0;
  Kernel kernel;  // class, math, shape, FLOPs and bytes as the simulator counts them
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
  int64_t context = 0;  // visible compressed positions the kernel drew from (0: not applicable)
};

struct MeasurementSet {
  std::map<std::string, std::string> metadata;  // from the first file; all files must name the same gpu
  std::map<std::string, int> metadata_lines;    // each metadata line's number in the first file
  std::vector<std::string> files;
  std::vector<std::string> file_hashes;  // FNV-1a of each file's bytes, for provenance
  std::vector<Measurement> rows;
};

// Reads every *.csv in `dir` (sorted by name). Columns are found by the
// header: the twelve the fit needs are required; `context` and the harness's
// derived rates (achieved_gbps, achieved_tflops, fraction_of_copy,
// fraction_of_compute_ceiling) are optional, and where present must agree with
// the row's own bytes, FLOPs and time (a hand-edited time shows up here).
// Throws InputError with file, line and column on a malformed row, an unknown
// column or a missing metadata field.
MeasurementSet load_measurements(const std::string& dir);

// The GPU model a name carries: its first word of one or two capitals and
// two to four digits ("NVIDIA H100 80GB HBM3": H100; H20, GB200); empty where none.
std::string gpu_model_word(const std::string& name);

// Refuses measurements taken on another GPU than the profile they would
// calibrate or validate (`profile_stem`): a folder is named after its
// profile, so an H100's files left in validation/measurements/h200/ would
// otherwise fit H200's profile to an H100. The device's name (the files'
// gpu line) must carry the profile name's GPU model, and its SM count the
// profile's (another part of the model, a PCIe card, has fewer). Throws
// InputError at the first file's line that differs.
void require_measured_on(const MeasurementSet& set, const std::string& profile_stem, const GpuProfile& gpu);

// The committed measurement folders under <data_dir>/validation/measurements/
// that hold at least one .csv (one per GPU), sorted; empty when none.
std::vector<std::string> measured_gpu_dirs(const std::string& data_dir);

}  // namespace v41sim
