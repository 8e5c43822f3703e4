// Shared-memory barriers (mbarrier, sm_90) for warp-specialized kernels: a
// producer's threads arrive on a stage's "full" barrier once its data is in
// shared memory, consumers wait on it by phase parity and arrive on its
// "empty" barrier once done with it. An arrive releases and a completed wait
// acquires the arriving threads' shared-memory writes (CTA scope). And a
// named barrier for a subset of a CTA's warps.
#pragma once

#include <cstdint>

#include "kernels/common/cp_async.cuh"

namespace v41sim::kernels::mbarrier {

// By one thread, before a CTA-wide barrier that precedes any other use.
__device__ inline void init(uint64_t* barrier, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(barrier)), "r"(arrivals)
               : "memory");
}

__device__ inline void arrive(uint64_t* barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(barrier)) : "memory");
}

// Until the phase of parity `parity` (0, 1, 0, ... for the barrier's 1st,
// 2nd, 3rd completion) has completed.
__device__ inline void wait(uint64_t* barrier, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(shared_address(barrier)), "r"(parity)
        : "memory");
  } while (!done);
}

// Named barrier `id` (1-15; 0 is __syncthreads) among `threads` threads, a
// multiple of 32, all of whole warps.
template <int kId, int kThreads>
__device__ inline void sync_threads() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(kId), "n"(kThreads) : "memory");
}
// The same with the barrier chosen at run time (one a warpgroup, say).
template <int kThreads>
__device__ inline void sync_named(int id) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "n"(kThreads) : "memory");
}

}  // namespace v41sim::kernels::mbarrier
