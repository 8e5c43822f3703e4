// One mHC site step on the device for the checks: the inputs uploaded, a
// form launched on them, its results downloaded (outputs start poisoned).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common/device_buffer.h"
#include "kernels/mhc/mhc_mixing.h"

namespace v41sim::kernels {

// What a form's launch reads and writes, on the device.
struct MhcStepDevice {
  const uint16_t* X;
  const uint16_t* y;
  const float* coeffs;
  MhcSiteDevice next;
  uint16_t* streams;     // X', block i's merge
  uint16_t* next_input;  // block i+1's input
  float* next_coeffs;    // block i+1's coefficients
};

template <typename Launch>
MhcStepResult run_mhc_step(const std::vector<uint16_t>& X, const std::vector<uint16_t>& y,
                           const std::vector<float>& coeffs, const MhcWeights& next, Launch&& launch) {
  const DeviceBuffer<uint16_t> dX(X), dy(y), dfn(next.fn);
  const DeviceBuffer<float> dc(coeffs);
  const DeviceBuffer<uint16_t> merged(X.size()), input(y.size());
  const DeviceBuffer<float> next_coeffs(coeffs.size());
  launch(MhcStepDevice{
      dX.get(), dy.get(), dc.get(), {dfn.get(), next.scales}, merged.get(), input.get(), next_coeffs.get()});
  CUDA_CHECK(cudaGetLastError());
  return {merged.download(X.size()), input.download(y.size()), next_coeffs.download(coeffs.size())};
}

}  // namespace v41sim::kernels
