// StepLog: the forward steps a serving engine ran, as its log gives them, to
// time each with the kernel model and set the model against the engine's own
// times (`v41sim step-log`).
//
// A CSV, one row per step, its header naming the columns in any order:
//   phase        prefill, decode, or mixed (a decode step carrying prompt
//                chunks, as an engine that mixes them in runs it)
//   batch        prompts in a prefill step; sequences decoding (per GPU)
//   context      prefill: tokens of each prompt up to the chunk's end;
//                decode, mixed: each sequence's tokens so far (the batch's mean)
//   new_tokens   prefill: tokens each prompt computes in this step (the rest
//                is its cached prefix or earlier chunks); decode, mixed: 0
//   drafts       decode, mixed: draft tokens each sequence verifies; prefill: 0
//   continuing   (optional) prefill, mixed: prompts whose chunk is not their
//                last; a file without the column has every chunk end its prompt
//   chunk_prompts, chunk_tokens, chunk_context  (optional; a mixed row needs
//                them) the prompts whose chunks ride on the step, the tokens
//                each computes, and each prompt's tokens up to its chunk's end;
//                0 in prefill and decode rows
//   measured_us  (optional) the step's time on the engine, in microseconds
// Blank lines and '#' comments are skipped; a CRLF line end and a UTF-8 byte
// order mark are taken as written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace v41sim {

enum class LoggedKind { kPrefill, kDecode, kMixed };
const char* logged_kind_name(LoggedKind kind);  // "prefill", "decode", "mixed"

struct LoggedStep {
  int line = 0;  // the row's line in the file, for messages
  LoggedKind kind = LoggedKind::kDecode;
  int64_t batch = 0;
  int64_t context = 0;
  int64_t new_tokens = 0;
  int64_t drafts = 0;
  int64_t continuing = 0;
  int64_t chunk_prompts = 0;  // mixed: the prompt chunks the step carries
  int64_t chunk_tokens = 0;
  int64_t chunk_context = 0;
  std::optional<double> measured_us;
};

struct StepLog {
  std::string file;
  bool measured = false;  // the file has a measured_us column
  std::vector<LoggedStep> steps;
};

// Reads and checks a step log: every required column, no unknown or repeated
// one, each cell a value its column takes, at least one row. Checks that need
// the model (a context past its max_context, drafts past its block) come when
// the steps are timed. Throws InputError naming file, line and column.
StepLog load_step_log(const std::string& path);

}  // namespace v41sim
