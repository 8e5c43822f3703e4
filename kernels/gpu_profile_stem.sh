#!/usr/bin/env sh
# The hw_profiles stem a CUDA device's name stands for ("NVIDIA H100 80GB
# HBM3" -> h100_sxm): the profile whose name carries the same GPU model, the
# first word of one or two capitals and two to four digits (the simulator's
# gpu_model_word, sim/validation/measurement_file.h). measure_on_device.sh
# measures into validation/measurements/<stem>/ by it, so a GPU's rows land
# in its own profile's folder whatever the caller named. Prints the stem;
# exits 1 where no profile, or more than one, matches.
#   kernels/gpu_profile_stem.sh "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)"
model_word() { printf '%s\n' "$1" | tr ' ' '\n' | grep -E '^[A-Z]{1,2}[0-9]{2,4}$' | head -n1; }
model=$(model_word "${1:?usage: gpu_profile_stem.sh <device name>}")
[ -n "$model" ] || exit 1
found=""
for profile in "$(dirname "$0")"/../hw_profiles/*.yaml; do
  name=$(grep -m1 '^name:' "$profile" | sed 's/^name:[[:space:]]*//')
  if [ "$(model_word "$name")" = "$model" ]; then
    [ -z "$found" ] || exit 1  # two profiles of one model: the caller must say which
    found=$(basename "$profile" .yaml)
  fi
done
[ -n "$found" ] || exit 1
echo "$found"
