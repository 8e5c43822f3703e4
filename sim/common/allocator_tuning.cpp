#include "sim/common/allocator_tuning.h"

#if __has_include(<malloc.h>)
#include <malloc.h>
#endif

namespace v41sim {

void keep_freed_memory_in_process() {
#if defined(__GLIBC__) && defined(M_TRIM_THRESHOLD)
  constexpr int kTrimAbove = 1 << 30;  // never trim the heap's top below 1 GiB free
  constexpr int kTopPad = 64 << 20;    // grow the heap 64 MiB at a time
  mallopt(M_TRIM_THRESHOLD, kTrimAbove);
  mallopt(M_TOP_PAD, kTopPad);
  // Blocks up to glibc's largest threshold (32 MiB on 64-bit) from the heap
  // too, so they are kept rather than unmapped when freed.
  constexpr int kMmapAbove = 32 << 20;
  mallopt(M_MMAP_THRESHOLD, kMmapAbove);
#endif
}

}  // namespace v41sim
