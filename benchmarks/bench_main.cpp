// The benchmark programs' main: Google Benchmark's own, with the allocator
// set as the v41sim binary sets it (sim/common/allocator_tuning.h), so the
// figures are what the binary gets.
#include <benchmark/benchmark.h>

#include "sim/common/allocator_tuning.h"

int main(int argc, char** argv) {
  v41sim::keep_freed_memory_in_process();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
