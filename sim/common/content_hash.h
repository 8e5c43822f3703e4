// A file's content hash for provenance: calibration and band files record the
// inputs they were made from, so a reader can tell which bytes they came from.
#pragma once

#include <string>

namespace v41sim {

// FNV-1a (64-bit) of the bytes, as 16 lowercase hex digits. Not cryptographic:
// it names a version of a file, it does not guard against forgery.
std::string fnv1a_hex(const std::string& bytes);

// The same of a whole file's bytes; an InputError naming the file if it cannot be read.
std::string file_fnv1a_hex(const std::string& path);

}  // namespace v41sim
