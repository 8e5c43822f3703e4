#include "sim/model/block_scaled_format.h"

#include <fmt/format.h>

#include <stdexcept>

namespace v41sim {

int64_t BlockScaledFormat::bytes_for(int64_t count) const {
  int64_t bits = count * bits_of(values);
  if (scale) bits += (count / scale_group) * bits_of(*scale);
  return bits / 8;
}

double BlockScaledFormat::bytes_per_value() const {
  double bits = bits_of(values);
  if (scale) bits += static_cast<double>(bits_of(*scale)) / static_cast<double>(scale_group);
  return bits / 8.0;
}

std::string BlockScaledFormat::describe() const {
  if (!scale) return std::string(name_of(values));
  return fmt::format("{} + {}/{}", name_of(values), name_of(*scale), scale_group);
}

namespace {

ElementFormat read_format(const YamlNode& node) {
  try {
    return parse_element_format(node.as_string());
  } catch (const std::invalid_argument& e) {
    node.fail(e.what());
  }
}

}  // namespace

BlockScaledFormat read_block_scaled_format(const YamlNode& node) {
  BlockScaledFormat format;
  format.values = read_format(node.required("dtype"));
  const auto scale = node.optional("scale_dtype");
  const auto group = node.optional("scale_group");
  if (scale.has_value() != group.has_value()) {
    node.fail("scale_dtype and scale_group must be given together");
  }
  if (scale) {
    format.scale = read_format(*scale);
    format.scale_group = group->as_positive_int();
  }
  return format;
}

}  // namespace v41sim
