#include "sim/common/yaml_what_if.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/common/input_error.h"

namespace v41sim {
namespace {

thread_local const ScopedYamlOverride* innermost = nullptr;

std::string normalised(const std::string& path) {
  return std::filesystem::absolute(path).lexically_normal().string();
}

bool is_number(const YAML::Node& node) {
  double value = 0;
  return node.IsScalar() && YAML::convert<double>::decode(node, value);
}

void collect(const YAML::Node& node, const std::string& path, const std::string& file,
             const std::string& text, std::vector<AssumedValue>& out) {
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      collect(node[i], path + "[" + std::to_string(i) + "]", file, text, out);
    }
    return;
  }
  if (!node.IsMap()) return;
  const YAML::Node value = node["value"];
  const YAML::Node assumed = node["assumed"];
  if (value && assumed && is_number(value) && assumed.IsScalar()) {
    const YAML::Mark mark = value.Mark();
    const std::string& written = value.Scalar();
    const auto offset = static_cast<std::size_t>(mark.pos);
    // A plain scalar starts where its mark says; quoted or odd forms are left out.
    if (mark.pos >= 0 && text.compare(offset, written.size(), written) == 0) {
      AssumedValue v;
      v.file = file;
      v.field = path;
      v.line = mark.line + 1;
      v.offset = offset;
      v.text = written;
      v.value = value.as<double>();
      v.integer = written.find_first_of(".eE") == std::string::npos;
      v.assumption = assumed.Scalar();
      out.push_back(std::move(v));
    }
  }
  for (const auto& item : node) {
    const std::string key = item.first.as<std::string>();
    collect(item.second, path.empty() ? key : path + "." + key, file, text, out);
  }
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError({path, 0, ""}, "cannot open file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<AssumedValue> find_assumed_values(const std::string& path) {
  const std::string text = read_text_file(path);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError({path, e.mark.line + 1, ""}, "malformed YAML: " + e.msg);
  }
  std::vector<AssumedValue> out;
  collect(root, "", path, text, out);
  return out;
}

std::string with_value_replaced(const std::string& file_text, const AssumedValue& v,
                                const std::string& replacement) {
  std::string out = file_text;
  out.replace(v.offset, v.text.size(), replacement);
  return out;
}

ScopedYamlOverride::ScopedYamlOverride(const std::string& path, std::string text)
    : key_(normalised(path)), text_(std::move(text)), outer_(innermost) {
  innermost = this;
}

ScopedYamlOverride::~ScopedYamlOverride() { innermost = outer_; }

const std::string* ScopedYamlOverride::text_for(const std::string& path) {
  if (innermost == nullptr) return nullptr;
  const std::string key = normalised(path);
  for (const ScopedYamlOverride* o = innermost; o != nullptr; o = o->outer_) {
    if (o->key_ == key) return &o->text_;
  }
  return nullptr;
}

}  // namespace v41sim
