// A request trace in Mooncake's public format (kvcache-ai/Mooncake,
// FAST'25 release; replayed by NVIDIA Dynamo's and AIPerf's benchmarks):
// JSON lines of
//   {"timestamp": ms since the first request, "input_length": tokens,
//    "output_length": tokens, "hash_ids": [one id per block of the prompt]}
// where a block is `block_tokens` tokens (512 in Mooncake's traces) and two
// prompts share a prefix as far as their leading ids agree. The format names
// no sessions: each line is one request, its cacheable prefix found by blocks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/serving/workload_spec.h"

namespace v41sim {

// Rows in file order, each its own session (its line number less one); the
// ids of each row's blocks, how many of them no earlier row names, and how
// many leading ones an earlier row does. Throws
// InputError naming the file, line and field: malformed JSON, a missing or
// unknown field, a count that is not a whole number in range, a time before
// the line above, or a block list whose length is not input_length over
// block_tokens, rounded up (a sign that block_tokens is not the trace's).
std::vector<WorkloadSpec::TraceRow> read_mooncake_trace(const std::string& path, int64_t block_tokens);

}  // namespace v41sim
