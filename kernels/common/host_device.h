// V41_HD marks functions shared by the CPU references and the CUDA kernels,
// so both compute the same rounding from one definition.
#pragma once

#if defined(__CUDACC__)
#define V41_HD __host__ __device__ inline
#else
#define V41_HD inline
#endif
