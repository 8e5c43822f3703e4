#!/bin/sh
# Compiler launcher for the sm_90a kernels: runs the compile command it is
# given and fails it where ptxas reports that it serialized a kernel's wgmma
# steps (info C7514 and its kin: "wgmma.mma_async instructions are
# serialized"), which would make every step wait for the one before and
# leave the tensor cores idle between them. ptxas says so only as
# information, never as a warning, so -Werror does not catch it.
output=$("$@" 2>&1)
status=$?
[ -n "$output" ] && printf '%s\n' "$output" >&2
[ "$status" -ne 0 ] && exit "$status"
case "$output" in
*"instructions are serialized"*)
  echo "error: ptxas serialized a kernel's wgmma steps (see above)" >&2
  exit 1
  ;;
esac
exit 0
