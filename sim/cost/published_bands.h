// The error band the published priors carry, for kernel classes that no
// measurement of ours has calibrated.
//
// `v41sim validate --write-published-bands` times every published kernel
// figure (validation/published/*.yaml) with the priors alone and writes, per
// kernel class, the 90th percentile of |relative error| over the figures of
// the priors' architecture to validation/calibration/published_bands.yaml.
// Most of those figures are the ones the priors were read off, so the band is
// in-sample and says how well the priors fit, not how they predict; the file
// records how many set a prior, and outputs name the band's origin.
//
// A GPU other than the one the priors were published on gets the band widened
// by the transfer rule of the calibration it uses (same architecture, or
// across), as a calibrated class's band is.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "sim/cost/cost_params.h"
#include "sim/graph/kernel.h"
#include "sim/hw/gpu_profile.h"

namespace v41sim {

struct PublishedClassBand {
  double band_90_pct = 0;  // 90th percentile of |error| of the priors, percent
  int references = 0;      // published figures of this class on the architecture
  int set_priors = 0;      // of them, those a prior was read off (in-sample)
};

struct PublishedBands {
  std::string file;
  std::string measured_on;   // hw_profiles stem the priors' efficiencies were published on
  std::string architecture;  // the architecture whose figures made the bands
  int min_references = 0;    // a class with fewer figures gets no band
  std::array<std::optional<PublishedClassBand>, kKernelClassCount> classes;
  // The priors on whole forward steps of serving engines (probe kind step, on
  // any GPU); none where no such figure is published.
  std::optional<ThroughputErrors> whole_steps;
  // And on whole serving benchmarks (probe kind serving, their throughput figures).
  std::optional<ThroughputErrors> serving_benchmarks;
};

// Where the file lives under a data directory.
std::string published_bands_path(const std::string& data_dir);

// Reads the file; a malformed one is an InputError naming file, line and field.
PublishedBands load_published_bands_file(const std::string& path);

// Gives each class of `params` that has no band of its own the published band
// of its class, widened for `gpu` by `params.transfer`: nothing on the GPU the
// priors were published on, the same-architecture widening on another GPU of
// that architecture, the cross-architecture widening elsewhere. The priors
// (uncalibrated params) also get the whole-step errors, which they were tested on.
void attach_published_bands(CostParams& params, const PublishedBands& bands, const GpuProfile& gpu,
                            const std::string& gpu_stem);

}  // namespace v41sim
