#!/usr/bin/env bash
# One call on a lent GPU machine (CUDA toolkit and CMake only, no registry):
# build the kernels for the GPU at hand, run every correctness check, then the
# full measurement. The CSV and the logs land under $OUT (the device tool's
# return folder) as well as in validation/measurements/<gpu>/; commit the CSV
# from there, then run `v41sim calibrate --measurements validation/measurements/<gpu>`.
# Per-group timeouts keep one hung kernel from eating the device tool's
# 10-minute call.
#   kernels/measure_on_device.sh h200        # or h100_sxm
set -uo pipefail
gpu=${1:?usage: kernels/measure_on_device.sh <hw_profiles stem, e.g. h200>}
out=${OUT:-/tmp/v41sim_device_out}
mkdir -p "$out"
cd "$(dirname "$0")/.."
nvidia-smi >"$out/nvidia-smi.txt" 2>&1
if ! { cmake -S kernels -B build-kernels -DCMAKE_BUILD_TYPE=Release -DV41SIM_CUDA_ARCHS=native &&
  cmake --build build-kernels -j "$(nproc)"; } >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
./build-kernels/v41sim_measure --checks --group-timeout 60 2>&1 | tee "$out/checks.log"
./build-kernels/v41sim_measure --out "validation/measurements/$gpu" --group-timeout 120 >"$out/measure.log" 2>&1
status=$?
cp -r "validation/measurements/$gpu" "$out/" 2>/dev/null
tail -60 "$out/measure.log"
exit $status
