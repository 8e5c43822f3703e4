#include "sim/common/yaml_reader.h"

#include <fmt/format.h>

#include <cmath>
#include <set>

#include "sim/common/yaml_what_if.h"

namespace v41sim {
namespace {

int line_of(const YAML::Node& node, int fallback) {
  const YAML::Mark mark = node.Mark();
  return mark.line >= 0 ? mark.line + 1 : fallback;
}

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// A key given twice in one map: YAML forbids it, and yaml-cpp would keep the
// first silently, so an edit to the second would change nothing.
void refuse_repeated_keys(const YAML::Node& node, const std::string& file, const std::string& path) {
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      refuse_repeated_keys(node[i], file, path + "[" + std::to_string(i) + "]");
    return;
  }
  if (!node.IsMap()) return;
  std::set<std::string> seen;
  for (const auto& item : node) {
    const std::string key = item.first.Scalar();
    const std::string field = join_path(path, key);
    if (!seen.insert(key).second) {
      throw InputError({file, item.first.Mark().line + 1, field},
                       "given twice in one map (YAML keys are unique)");
    }
    refuse_repeated_keys(item.second, file, field);
  }
}

}  // namespace

YamlNode::YamlNode(YAML::Node node, std::string file, std::string path, int line)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)), line_(line) {}

YamlNode YamlNode::load_file(const std::string& path) { return parse_string(yaml_text(path), path); }

YamlNode YamlNode::parse_string(const std::string& text, const std::string& name) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError({name, e.mark.line + 1, ""}, "malformed YAML: " + e.msg);
  }
  if (!root.IsMap()) throw InputError({name, 1, ""}, "expected a YAML map at the top level");
  refuse_repeated_keys(root, name, "");
  return YamlNode(root, name, "", 1);
}

YamlNode YamlNode::child(const YAML::Node& node, const std::string& key) const {
  return YamlNode(node, file_, join_path(path_, key), line_of(node, line_));
}

void YamlNode::require_map() const {
  if (!node_.IsMap()) fail("expected a map of fields");
}

bool YamlNode::has(std::string_view key) const {
  require_map();
  const YAML::Node& self = node_;
  return static_cast<bool>(self[std::string(key)]);
}

YamlNode YamlNode::required(std::string_view key) const {
  require_map();
  const YAML::Node& self = node_;
  const YAML::Node value = self[std::string(key)];
  if (!value || value.IsNull()) {
    throw InputError({file_, line_, join_path(path_, std::string(key))}, "required field is missing");
  }
  return child(value, std::string(key));
}

std::optional<YamlNode> YamlNode::optional(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return required(key);
}

void YamlNode::expect_only(std::initializer_list<std::string_view> allowed) const {
  require_map();
  for (const auto& item : node_) {
    const std::string key = item.first.as<std::string>();
    bool known = false;
    for (std::string_view a : allowed) known = known || key == a;
    if (known) continue;
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    throw InputError({file_, line_of(item.first, line_), join_path(path_, key)},
                     fmt::format("unknown field (expected one of: {})", list));
  }
}

std::vector<std::pair<std::string, YamlNode>> YamlNode::entries() const {
  require_map();
  std::vector<std::pair<std::string, YamlNode>> out;
  for (const auto& item : node_) {
    const std::string key = item.first.as<std::string>();
    out.emplace_back(key, child(item.second, key));
  }
  return out;
}

std::vector<YamlNode> YamlNode::elements() const {
  if (!node_.IsSequence()) fail("expected a list");
  std::vector<YamlNode> out;
  out.reserve(node_.size());
  for (std::size_t i = 0; i < node_.size(); ++i) {
    const YAML::Node& self = node_;
    const YAML::Node item = self[i];
    out.push_back(YamlNode(item, file_, fmt::format("{}[{}]", path_, i), line_of(item, line_)));
  }
  return out;
}

void YamlNode::require_scalar(const char* expected) const {
  if (!node_.IsScalar()) fail(fmt::format("expected {}", expected));
}

bool YamlNode::is_scalar() const { return node_.IsScalar(); }

std::string YamlNode::as_string() const {
  require_scalar("a string");
  return node_.Scalar();
}

bool YamlNode::as_bool() const {
  require_scalar("true or false");
  bool value = false;
  if (!YAML::convert<bool>::decode(node_, value)) {
    fail(fmt::format("expected true or false, got '{}'", node_.Scalar()));
  }
  return value;
}

int64_t YamlNode::as_int() const {
  require_scalar("an integer");
  // Accept 1e9-style integers written as floats only when they are exact.
  long long value = 0;
  if (YAML::convert<long long>::decode(node_, value)) return value;
  double real = 0;
  if (YAML::convert<double>::decode(node_, real) && std::isfinite(real) && real == std::floor(real) &&
      std::fabs(real) < 9.0e18) {
    return static_cast<int64_t>(real);
  }
  fail(fmt::format("expected an integer, got '{}'", node_.Scalar()));
}

double YamlNode::as_double() const {
  require_scalar("a number");
  double value = 0;
  if (!YAML::convert<double>::decode(node_, value) || !std::isfinite(value)) {
    fail(fmt::format("expected a finite number, got '{}'", node_.Scalar()));
  }
  return value;
}

int64_t YamlNode::as_positive_int() const {
  const int64_t value = as_int();
  if (value <= 0) fail(fmt::format("expected a positive integer, got {}", value));
  return value;
}

int64_t YamlNode::as_non_negative_int() const {
  const int64_t value = as_int();
  if (value < 0) fail(fmt::format("expected a non-negative integer, got {}", value));
  return value;
}

double YamlNode::as_positive_double() const {
  const double value = as_double();
  if (value <= 0) fail(fmt::format("expected a positive number, got {}", value));
  return value;
}

double YamlNode::as_non_negative_double() const {
  const double value = as_double();
  if (value < 0) fail(fmt::format("expected a non-negative number, got {}", value));
  return value;
}

std::vector<int64_t> YamlNode::as_int_list() const {
  std::vector<int64_t> out;
  for (const YamlNode& item : elements()) out.push_back(item.as_int());
  return out;
}

void YamlNode::fail(const std::string& what_was_wrong) const { throw InputError(location(), what_was_wrong); }

InputLocation YamlNode::location() const { return {file_, line_, path_}; }

}  // namespace v41sim
