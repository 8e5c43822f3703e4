#include "sim/common/input_error.h"

#include <fmt/format.h>

namespace v41sim {
namespace {

std::string format_message(const InputLocation& where, const std::string& what) {
  std::string prefix = where.file.empty() ? std::string("input") : where.file;
  if (where.line > 0) prefix += fmt::format(":{}", where.line);
  if (!where.field.empty()) prefix += fmt::format(": field '{}'", where.field);
  return fmt::format("{}: {}", prefix, what);
}

}  // namespace

InputError::InputError(InputLocation where, const std::string& what_was_wrong)
    : std::runtime_error(format_message(where, what_was_wrong)),
      where_(std::move(where)),
      detail_(what_was_wrong) {}

}  // namespace v41sim
