// The rows of one shape timed on several complete paths, named as an engine
// would dispatch the shape: the fastest path's row carries the simulator's
// kernel name (and is fitted), every other `<name>_<suffix>_baseline` (and
// is recorded, not fitted). Plain C++, so a CPU test holds the rule.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/common/timing_stats.h"

namespace v41sim::kernels {

// A path's timed row before it is named: its fixed name (kept where suffix
// is null), its math, its time, and the suffix of its baseline name.
struct TimedPathRow {
  std::string name;
  const char* math;
  TimingStats time;
  const char* suffix;
};

struct TimedPathName {
  std::string suffix;  // the path's, in its baseline row's name
  double median_us;
};

// One name per path, in their order; ties go to the earlier path.
inline std::vector<std::string> dispatched_names(const std::string& name,
                                                 const std::vector<TimedPathName>& paths) {
  std::size_t fastest = 0;
  for (std::size_t i = 1; i < paths.size(); ++i) {
    if (paths[i].median_us < paths[fastest].median_us) fastest = i;
  }
  std::vector<std::string> names;
  for (std::size_t i = 0; i < paths.size(); ++i)
    names.push_back(i == fastest ? name : name + "_" + paths[i].suffix + "_baseline");
  return names;
}

// Names a shape's timed rows in place: the paths with a suffix (a complete
// path an engine could dispatch) compete for `name` as dispatched_names
// says; the others (a fixed-name baseline) keep theirs. Path: .name
// (std::string), .suffix (const char*, null for a fixed name) and
// .time.median_us.
template <class Path>
void name_competing_paths(const std::string& name, std::vector<Path>& paths) {
  std::vector<TimedPathName> competing;
  for (const Path& p : paths) {
    if (p.suffix != nullptr) competing.push_back({p.suffix, p.time.median_us});
  }
  const std::vector<std::string> names = dispatched_names(name, competing);
  std::size_t next = 0;
  for (Path& p : paths) {
    if (p.suffix != nullptr) p.name = names[next++];
  }
}

}  // namespace v41sim::kernels
