#!/usr/bin/env bash
# One call on a lent GPU machine (CUDA toolkit and CMake only, no registry):
# build the kernels for the GPU at hand, run every correctness check, then the
# full measurement. The CSV and the logs land under $OUT (the device tool's
# return folder) as well as in validation/measurements/<gpu>/; commit the CSV
# from there, then run `v41sim calibrate --measurements validation/measurements/<gpu>`.
# Per-group timeouts keep one hung kernel from eating the device tool's
# 10-minute call, and a deadline for the whole script (V41SIM_DEADLINE_S,
# default 540 s: give the device call a little more) makes the harness stop
# starting groups in time; its file, rewritten after every group, names what
# it did not get to.
# The lent machine gets a copy of the tree without .git: name the commit, so
# the CSV's metadata carries it (else it says "unknown"). Its compilers may
# warn where ours do not, so warnings do not fail the build there.
# The rows go to validation/measurements/<stem>/, the stem of the profile
# the device's own name stands for (kernels/gpu_profile_stem.sh): a lent
# machine may be an H100 or an H200 whatever the caller expected, and
# `v41sim calibrate` refuses rows measured on another GPU than the folder's
# profile. The argument names the profile only where the device's name
# matches none.
#   V41SIM_GIT_COMMIT=<sha of HEAD> kernels/measure_on_device.sh
#   V41SIM_DEADLINE_S=300 kernels/measure_on_device.sh h200
set -uo pipefail
asked=${1:-}
deadline=${V41SIM_DEADLINE_S:-540}
left() { echo $((deadline - SECONDS - 20)); }  # seconds left, keeping 20 for the copies
out=${OUT:-/tmp/v41sim_device_out}
mkdir -p "$out"
cd "$(dirname "$0")/.."
# CMake finds nvcc on PATH; the toolkit's usual home where it is not there.
command -v nvcc >/dev/null || export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi >"$out/nvidia-smi.txt" 2>&1
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)
if gpu=$(sh kernels/gpu_profile_stem.sh "$device"); then
  [ -z "$asked" ] || [ "$asked" = "$gpu" ] ||
    echo "the device is '$device': its rows go to validation/measurements/$gpu, not $asked" | tee -a "$out/nvidia-smi.txt"
elif [ -n "$asked" ]; then
  gpu=$asked
else
  echo "no hw_profiles entry names the device '$device': name its profile, kernels/measure_on_device.sh <stem>"
  exit 1
fi
{ nvcc --version; cmake --version; } >"$out/toolchain.txt" 2>&1
if ! { cmake -S kernels -B build-kernels -DCMAKE_BUILD_TYPE=Release -DV41SIM_CUDA_ARCHS=native \
  -DV41SIM_CUDA_LOCAL_MEMORY_IS_ERROR=OFF -DV41SIM_WARNINGS_AS_ERRORS=OFF &&
  cmake --build build-kernels -j "$(nproc)"; } >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
echo "built in ${SECONDS} s" >>"$out/build.log"
./build-kernels/v41sim_measure --checks --record "$out/checks.tsv" --group-timeout 60 --deadline "$(left)" 2>&1 |
  tee "$out/checks.log"
if [ "$(left)" -lt 30 ]; then
  echo "no time left to measure after the build and the checks (${SECONDS} s of ${deadline})" | tee "$out/measure.log"
  exit 1
fi
# The wgmma kernels' checks just run stand for their checks alone before the
# sweep's groups (a hung one is not waited for twice).
./build-kernels/v41sim_measure --out "validation/measurements/$gpu" --checks-from "$out/checks.tsv" \
  --group-timeout 120 --deadline "$(left)" >"$out/measure.log" 2>&1
status=$?
cp -r "validation/measurements/$gpu" "$out/" 2>/dev/null
tail -60 "$out/measure.log"
exit $status
