// parallel_for: fn(0) .. fn(n - 1) on all cores. For independent jobs that
// each write only their own slot of a result the caller sized beforehand, so
// the result does not depend on how the jobs interleave. An exception thrown
// by a job is rethrown after all have ended: the one of the lowest index.
#pragma once

#include <cstddef>
#include <functional>

namespace v41sim {

void parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn);

}  // namespace v41sim
