#!/usr/bin/env sh
# kernels/gpu_profile_stem.sh: each device name picks its own profile (the
# names the lent H100 and H200 report, and the other GPUs' in the same form),
# and a device no profile names picks none (exit 1).
script="$(dirname "$0")/../../kernels/gpu_profile_stem.sh"
failed=0
expect() {
  got=$(sh "$script" "$1")
  if [ "$got" != "$2" ]; then
    echo "'$1': expected '$2', got '$got'"
    failed=1
  fi
}
expect "NVIDIA H100 80GB HBM3" h100_sxm
expect "NVIDIA H200" h200
expect "NVIDIA H20" h20
expect "NVIDIA H800" h800
expect "NVIDIA B200" b200
expect "NVIDIA GB200" gb200_nvl72
for unknown in "Tesla T4" "NVIDIA A100-SXM4-80GB" ""; do
  if sh "$script" "$unknown" >/dev/null 2>&1; then
    echo "'$unknown': expected no profile"
    failed=1
  fi
done
exit $failed
