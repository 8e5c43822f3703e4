// Keeps freed memory in the process instead of handing it back to the OS.
//
// A serving run builds and drops a step graph (about a thousand kernels) for
// every step shape it costs. With glibc's defaults the heap's top is trimmed
// back after each such burst and faulted in again by the next: page faults
// and brk calls took about a third of a step's costing. Called once at the
// start of a program, before any thread starts; elsewhere than glibc it does
// nothing.
#pragma once

namespace v41sim {

void keep_freed_memory_in_process();

}  // namespace v41sim
