// Same-input projection fusion: GEMMs of one block that read the same
// activations (same rows, math and weight format) run as one GEMM over their
// weights concatenated along N, as DeepSeek's V3 serving runs q_a and kv_a
// (DeepGEMM's published N = 2112 = 1536 + 576 shape). The input is read once,
// and one kernel of N columns fills the SMs where several narrow ones cannot.
#pragma once

#include <cstddef>
#include <vector>

#include "sim/graph/kernel.h"

namespace v41sim {

// Fuses, among kernels[first..], the GEMMs that name the same input
// (Kernel::input) with the same rows, math and operand bytes. The fused kernel
// takes the first member's place and joins the members' names with '+'.
void fuse_same_input_gemms(std::vector<Kernel>& kernels, std::size_t first);

}  // namespace v41sim
