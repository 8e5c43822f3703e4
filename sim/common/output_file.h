// Writing one of our output files: a path that cannot be written is the
// user's error (the flag that named it), never a silent success.
#pragma once

#include <string>

namespace v41sim {

// Writes `text` to `path`, replacing it; throws InputError naming `path` and
// `flag` when the file cannot be opened or written.
void write_output_file(const std::string& path, const std::string& text, const std::string& flag);

}  // namespace v41sim
