// The warpgroup MMA instructions (sm_90a) our kernels issue, FP32
// accumulators: m64n128k32 and m64n32k32 FP8 E4M3 and m64n64k16 BF16 with
// both operands from shared memory through descriptors
// (kernels/common/wgmma_layout.h), m64n256k16 BF16 with A from registers and
// B N-major; and the fences and groups that order them.
// Compiled only for the arch-specific target (-gencode arch=compute_90a);
// elsewhere the functions trap, and the host side refuses to launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/cp_async.cuh"
#include "kernels/common/cuda_check.h"
#include "kernels/common/dynamic_shared_memory.cuh"
#include "kernels/common/wgmma_layout.h"

namespace v41sim::kernels::wgmma {

// The swizzle is read off address bits: a kernel's operand tiles start
// 1,024-byte aligned, so its dynamic shared memory is used from the first
// such address (kernels allocate kAtomBytes more than they use).
__device__ inline uint8_t* atom_aligned(uint8_t* dynamic_smem) {
  return dynamic_smem + ((kAtomBytes - shared_address(dynamic_smem) % kAtomBytes) % kAtomBytes);
}

// A wgmma's accumulator operands, 32 at a time from d[i] on.
#define V41SIM_ACCUMULATORS_8(d, i)                                                                       \
  "+f"(d[(i)]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]), "+f"(d[(i) + 5]), \
      "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define V41SIM_ACCUMULATORS_32(d, i)                                                                    \
  V41SIM_ACCUMULATORS_8(d, (i)), V41SIM_ACCUMULATORS_8(d, (i) + 8), V41SIM_ACCUMULATORS_8(d, (i) + 16), \
      V41SIM_ACCUMULATORS_8(d, (i) + 24)

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define V41SIM_WGMMA_ASM(...) asm volatile(__VA_ARGS__)
#else
#define V41SIM_WGMMA_ASM(...) __trap()
#endif

// Before the first wgmma that reads or writes accumulator registers the
// threads have touched since.
__device__ inline void fence() { V41SIM_WGMMA_ASM("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void commit_group() { V41SIM_WGMMA_ASM("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ inline void wait_group() {
  V41SIM_WGMMA_ASM("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Shared memory written by ordinary stores that a wgmma reads next: each
// writing thread fences, then the CTA meets at a barrier.
__device__ inline void fence_shared_for_async_proxy() {
  V41SIM_WGMMA_ASM("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// d (64 x 128, the warpgroup's 64 values a thread) = a x b^T (+ d where
// accumulate), a 64 x 32 and b 128 x 32 E4M3, both K-major.
__device__ inline void mma_m64n128k32_e4m3(float (&d)[64], uint64_t a, uint64_t b, bool accumulate) {
  V41SIM_WGMMA_ASM(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1;\n}\n"
      : V41SIM_ACCUMULATORS_32(d, 0), V41SIM_ACCUMULATORS_32(d, 32)
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

// d (64 x 32, the warpgroup's 16 values a thread) = a x b^T (+ d where
// accumulate), a 64 x 32 and b 32 x 32 E4M3, both K-major.
__device__ inline void mma_m64n32k32_e4m3(float (&d)[16], uint64_t a, uint64_t b, bool accumulate) {
  V41SIM_WGMMA_ASM(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "%16, %17, p, 1, 1;\n}\n"
      : V41SIM_ACCUMULATORS_8(d, 0), V41SIM_ACCUMULATORS_8(d, 8)
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

// The FP8 K-major step of N = 2 x kValues columns our kernels issue:
// m64n128k32 (64 values a thread) or m64n32k32 (16).
template <int kValues>
__device__ inline void mma_k32_e4m3(float (&d)[kValues], uint64_t a, uint64_t b, bool accumulate) {
  static_assert(kValues == 64 || kValues == 16, "m64n128k32 or m64n32k32");
  if constexpr (kValues == 64) {
    mma_m64n128k32_e4m3(d, a, b, accumulate);
  } else {
    mma_m64n32k32_e4m3(d, a, b, accumulate);
  }
}

// d (64 x 64, the warpgroup's 32 values a thread) = a x b^T (+ d where
// accumulate), a 64 x 16 and b 64 x 16 BF16, both K-major in shared memory.
__device__ inline void mma_m64n64k16_bf16(float (&d)[32], uint64_t a, uint64_t b, bool accumulate) {
  V41SIM_WGMMA_ASM(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 0;\n}\n"
      : V41SIM_ACCUMULATORS_32(d, 0)
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

// d (64 x 256, the warpgroup's 128 values a thread) += a x b, a 64 x 16
// BF16 from registers (4 a thread, a_fragment_slot) and b 16 x 256 BF16 in
// shared memory, N-major (read_address_mn_major).
__device__ inline void mma_m64n256k16_bf16_rs(float (&d)[128], const uint32_t (&a)[4], uint64_t b) {
  V41SIM_WGMMA_ASM(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "
      "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "
      "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "
      "%62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, "
      "%82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, "
      "%102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, "
      "%119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "{%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
      : V41SIM_ACCUMULATORS_32(d, 0), V41SIM_ACCUMULATORS_32(d, 32), V41SIM_ACCUMULATORS_32(d, 64),
        V41SIM_ACCUMULATORS_32(d, 96)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

#undef V41SIM_WGMMA_ASM
#undef V41SIM_ACCUMULATORS_32
#undef V41SIM_ACCUMULATORS_8

}  // namespace v41sim::kernels::wgmma
