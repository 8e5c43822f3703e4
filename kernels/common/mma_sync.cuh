// The tensor-core instruction the kernels use: one warp-wide
// mma.sync.m16n8k16, BF16 operands, FP32 accumulators (sm_80 and later).
// Operand layouts: kernels/common/mma_fragments.h.
#pragma once

#include <cstdint>

namespace v41sim::kernels::mma {

__device__ inline void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace v41sim::kernels::mma
