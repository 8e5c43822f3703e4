// YamlNode: a YAML node that knows its file, line and key path.
//
// The only door through which YAML enters the simulator (a what-if study may
// hand it an edited text of a file: yaml_what_if.h). Loaders read plain
// structs through it, and every mistake in a file (missing, unknown or
// mistyped field, a value out of range) becomes an InputError that names the
// file, the line and the dotted field path. No value is ever defaulted
// silently: optional fields are read with optional() and the loader decides.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/common/input_error.h"

namespace v41sim {

class YamlNode {
 public:
  static YamlNode load_file(const std::string& path);
  // For tests and embedded defaults: `name` stands in for the file name.
  static YamlNode parse_string(const std::string& text, const std::string& name);

  // Map access.
  bool has(std::string_view key) const;
  YamlNode required(std::string_view key) const;
  std::optional<YamlNode> optional(std::string_view key) const;
  // Fails on the first key not in `allowed`, listing the allowed ones.
  void expect_only(std::initializer_list<std::string_view> allowed) const;
  std::vector<std::pair<std::string, YamlNode>> entries() const;

  // Sequence access.
  std::vector<YamlNode> elements() const;

  // Scalars. Each fails with "expected ..." when the value has another type.
  bool is_scalar() const;
  std::string as_string() const;
  bool as_bool() const;
  int64_t as_int() const;
  double as_double() const;
  int64_t as_positive_int() const;
  int64_t as_non_negative_int() const;
  double as_positive_double() const;
  double as_non_negative_double() const;
  std::vector<int64_t> as_int_list() const;

  [[noreturn]] void fail(const std::string& what_was_wrong) const;
  InputLocation location() const;

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  int line() const { return line_; }

 private:
  YamlNode(YAML::Node node, std::string file, std::string path, int line);
  YamlNode child(const YAML::Node& node, const std::string& key) const;
  void require_map() const;
  void require_scalar(const char* expected) const;

  YAML::Node node_;
  std::string file_;
  std::string path_;
  int line_;
};

}  // namespace v41sim
