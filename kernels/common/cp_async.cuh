// cp.async (sm_80 and later): global-to-shared copies that bypass registers,
// so a CTA keeps several tiles in flight while it computes on an earlier one.
// Each thread commits its copies in groups and waits until at most N groups
// are still pending; a __syncthreads() after the wait makes every thread's
// copies visible to the whole CTA.
#pragma once

#include <cstdint>

namespace v41sim::kernels {

__device__ inline uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes; zeros instead where `valid` is false (src is then not read, but
// must still be a global address).
__device__ inline void cp_async_16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}

// 16 bytes of which the first `bytes` (0-16) are read from src and the rest
// are zeros (src 16-byte aligned and a global address even when bytes is 0).
__device__ inline void cp_async_16_partial(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src),
               "r"(bytes)
               : "memory");
}

// 4 bytes (4-byte aligned at both ends).
__device__ inline void cp_async_4(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(shared_address(dst)), "l"(src) : "memory");
}

__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int kPending>
__device__ inline void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

}  // namespace v41sim::kernels
