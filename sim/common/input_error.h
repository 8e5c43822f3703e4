// InputError: the one exception type for bad user input (YAML files, CLI values).
//
// Every message names where the problem is (file, 1-based line, dotted field
// path) and what was expected, so a user can fix the file without reading our
// code. The CLI turns it into one line on stderr and exit status 2.
#pragma once

#include <stdexcept>
#include <string>

namespace v41sim {

struct InputLocation {
  std::string file;   // path as the user gave it; empty for CLI flags
  int line = 0;       // 1-based; 0 when unknown (e.g. a missing file)
  std::string field;  // dotted key path, e.g. "attention.indexer.topk"
};

class InputError : public std::runtime_error {
 public:
  InputError(InputLocation where, const std::string& what_was_wrong);

  const InputLocation& where() const { return where_; }
  const std::string& detail() const { return detail_; }

 private:
  InputLocation where_;
  std::string detail_;
};

// Exit status for any InputError reaching main().
inline constexpr int kBadInputExitCode = 2;

}  // namespace v41sim
