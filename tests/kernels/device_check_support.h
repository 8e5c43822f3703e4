// The GPU comparisons of the kernel tests: run device checks by name (the
// same kernels/checks the measuring harness runs), or skip visibly where the
// kernels were not compiled or no GPU is usable.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <string>

#ifdef V41SIM_HAVE_CUDA_KERNELS
#include "kernels/checks/device_checks.h"
#include "kernels/common/cuda_device.h"
#endif

namespace v41sim::kernels {

inline void expect_device_checks(std::initializer_list<const char*> names) {
#ifndef V41SIM_HAVE_CUDA_KERNELS
  (void)names;
  GTEST_SKIP() << "built without a CUDA compiler; the kernels were not compiled";
#else
  std::string why;
  if (!cuda_device_available(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
  const auto& checks = all_checks();
  for (const char* name : names) {
    const auto it = std::find_if(checks.begin(), checks.end(),
                                 [&](const NamedCheck& c) { return std::string(c.name) == name; });
    ASSERT_NE(it, checks.end()) << "no device check named " << name;
    const CheckResult result = it->run();
    EXPECT_TRUE(result.ok) << name << ": " << result.detail;
  }
#endif
}

// The same for kernels built for sm_90a alone (Hopper's wgmma): on a GPU of
// another kind they skip visibly too.
inline void expect_sm90a_device_checks(std::initializer_list<const char*> names) {
#ifdef V41SIM_HAVE_CUDA_KERNELS
  std::string why;
  if (cuda_device_available(&why) && !sm90a_device(&why)) GTEST_SKIP() << why;
#endif
  expect_device_checks(names);
}

}  // namespace v41sim::kernels
