// Moving each sourced figure of some files down and up, one at a time, and
// running something again under each: the engine of the sensitivity studies
// (a served run's $ and TPOT, sim/costing/assumption_sensitivity.h; a step's
// time, sim/cost/step_sensitivity.h). The run reads the moved value through
// YamlNode::load_file (ScopedYamlOverride), so it meets the loaders' checks
// as a user's edit would: a value a loader refuses is recorded, not clamped.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "sim/common/input_error.h"
#include "sim/common/parallel_for.h"
#include "sim/common/yaml_what_if.h"

namespace v41sim {

template <class Outcome>
struct MovedSide {
  double value = 0;      // the figure moved to this
  std::string rejected;  // what the loader said where it refused the value; empty if it ran
  Outcome outcome{};
};

template <class Outcome>
struct MovedFigure {
  SourcedNumber figure;
  MovedSide<Outcome> low, high;
};

template <class Outcome>
struct FigureMoves {
  Outcome baseline{};
  double swing = 0;
  std::vector<std::string> kinds;             // of the sources whose figures were moved
  std::vector<MovedFigure<Outcome>> figures;  // in the files' order
};

// The figures of `files` whose source is one of `kinds` (kSourceKinds), each
// file once. Throws InputError naming --swing for a swing outside (0, 1) and
// --kinds for no kind or an unknown one.
std::vector<SourcedNumber> figures_to_move(const std::vector<std::string>& files,
                                           const std::vector<std::string>& kinds, double swing);

// The figure's value times `factor`, as its file would write it (an integer
// stays one and moves by at least 1), and the file's text with it.
struct MovedValue {
  double value = 0;
  std::string file_text;
};
MovedValue move_figure(const SourcedNumber& figure, double factor);

// Told of each moved run as it ends, from the thread that ran it: the figure,
// the side run, and how many of all the moved runs have ended (this one
// included). It changes nothing; a long study shows its progress through it.
template <class Outcome>
using OnMoved = std::function<void(const SourcedNumber& figure, const MovedSide<Outcome>& side,
                                   std::size_t ended, std::size_t runs)>;

// Runs `run` as the files are, then with each figure moved down and up by
// `swing` (both sides of every figure on all cores; `run` must load what it
// reads inside itself). The baseline's InputError propagates.
template <class Outcome>
FigureMoves<Outcome> move_each_figure(const std::vector<std::string>& files,
                                      const std::function<Outcome()>& run, double swing,
                                      const std::vector<std::string>& kinds,
                                      const OnMoved<Outcome>& on_moved = {}) {
  FigureMoves<Outcome> out;
  out.swing = swing;
  out.kinds = kinds;
  for (SourcedNumber& f : figures_to_move(files, kinds, swing)) out.figures.push_back({std::move(f), {}, {}});
  out.baseline = run();
  const std::size_t runs = 2 * out.figures.size();
  std::atomic<std::size_t> ended{0};
  parallel_for(runs, [&](std::size_t job) {
    MovedFigure<Outcome>& m = out.figures[job / 2];
    MovedSide<Outcome>& side = job % 2 == 0 ? m.low : m.high;
    MovedValue moved = move_figure(m.figure, job % 2 == 0 ? 1 - swing : 1 + swing);
    side.value = moved.value;
    const ScopedYamlOverride edited(m.figure.file, std::move(moved.file_text));
    try {
      side.outcome = run();
    } catch (const InputError& e) {
      side.rejected = e.detail();  // the file, line and field are the figure's own
    }
    if (on_moved) on_moved(m.figure, side, ++ended, runs);
  });
  return out;
}

}  // namespace v41sim
