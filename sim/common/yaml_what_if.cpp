#include "sim/common/yaml_what_if.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "sim/common/catalog.h"
#include "sim/common/input_error.h"

namespace v41sim {
namespace {

thread_local const ScopedYamlOverride* innermost = nullptr;

// Fields whose numbers are what a file's user asks (an SLA's limits, a class
// of traffic's priority), not assumptions the file's own source could lend to.
const std::vector<std::string> kAskedKeys{"sla", "priority"};

// An edited file's text, and whether anything read it after the edits were
// installed (from any thread).
struct EditedText {
  std::string text;
  std::atomic<bool> read{false};
};

// Value edits from the command line: each edited file's text, and the edits.
struct InstalledEdits {
  std::map<std::string, EditedText> texts;  // normalised path -> edited text
  std::vector<ValueEdit> edits;
};
InstalledEdits& installed() {
  static InstalledEdits edits;
  return edits;
}

std::string normalised(const std::string& path) {
  return std::filesystem::absolute(path).lexically_normal().string();
}

bool is_number(const YAML::Node& node) {
  double value = 0;
  return node.IsScalar() && YAML::convert<double>::decode(node, value);
}

// What one scan looks for and where it puts what it finds.
struct Scan {
  const std::string& file;
  const std::string& text;
  const std::vector<std::string>& kinds;
  std::vector<SourcedNumber>& out;
  // The file's own source where it names one of `kinds` ("assumed: why"):
  // it sources the file's plain numbers. Empty kind: plain numbers are not figures.
  std::string file_kind, file_source;
};

// The kind of source a map gives with its value, of those asked for ("" if none).
std::string kind_of(const YAML::Node& node, const std::vector<std::string>& kinds) {
  for (const std::string& kind : kinds) {
    if (node[kind] && node[kind].IsScalar()) return kind;
  }
  return "";
}

// Records `value` (a number) as the figure at `path`, where the text writes it plainly.
void record(const YAML::Node& value, const std::string& path, const std::string& kind,
            const std::string& source, const Scan& scan) {
  const YAML::Mark mark = value.Mark();
  const std::string& written = value.Scalar();
  const auto offset = static_cast<std::size_t>(mark.pos);
  // A plain scalar starts where its mark says; quoted or odd forms are left out.
  if (mark.pos < 0 || scan.text.compare(offset, written.size(), written) != 0) return;
  SourcedNumber v;
  v.file = scan.file;
  v.field = path;
  v.line = mark.line + 1;
  v.offset = offset;
  v.text = written;
  v.value = value.as<double>();
  v.integer = written.find_first_of(".eE") == std::string::npos;
  v.kind = kind;
  v.source = source;
  scan.out.push_back(std::move(v));
}

// `plain`: numbers outside sourced maps take the file's own source (a zero
// is left out: no share of it moves it).
void collect(const YAML::Node& node, const std::string& path, const Scan& scan, bool plain) {
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      collect(node[i], path + "[" + std::to_string(i) + "]", scan, plain);
    return;
  }
  if (node.IsScalar()) {
    if (plain && !scan.file_kind.empty() && is_number(node) && node.as<double>() != 0) {
      record(node, path, scan.file_kind, scan.file_source, scan);
    }
    return;
  }
  if (!node.IsMap()) return;
  const YAML::Node value = node["value"];
  const std::string kind = kind_of(node, scan.kinds);
  if (value && !kind.empty() && is_number(value)) record(value, path, kind, node[kind].Scalar(), scan);
  // A map that gives its own source is one figure; none of its other numbers is plain.
  const bool own_source = !kind_of(node, kSourceKinds).empty();
  for (const auto& item : node) {
    const std::string key = item.first.as<std::string>();
    const bool asked = std::find(kAskedKeys.begin(), kAskedKeys.end(), key) != kAskedKeys.end();
    collect(item.second, path.empty() ? key : path + "." + key, scan, plain && !own_source && !asked);
  }
}

// The kind and text of a file's top-level `source: "<kind>: why"`, where the kind is one of `kinds`.
std::pair<std::string, std::string> file_source(const YAML::Node& root,
                                                const std::vector<std::string>& kinds) {
  if (!root.IsMap() || !root["source"] || !root["source"].IsScalar()) return {};
  const std::string& source = root["source"].Scalar();
  for (const std::string& kind : kinds) {
    if (source.rfind(kind + ":", 0) == 0) {
      const std::size_t text = source.find_first_not_of(' ', kind.size() + 1);
      return {kind, text == std::string::npos ? std::string() : source.substr(text)};
    }
  }
  return {};
}

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError({path, 0, ""}, "cannot open file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string yaml_text(const std::string& path) {
  const std::string* edited = ScopedYamlOverride::text_for(path);
  return edited != nullptr ? *edited : read_text_file(path);
}

std::vector<SourcedNumber> find_sourced_numbers(const std::string& path,
                                                const std::vector<std::string>& kinds) {
  const std::string text = yaml_text(path);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError({path, e.mark.line + 1, ""}, "malformed YAML: " + e.msg);
  }
  std::vector<SourcedNumber> out;
  auto [kind, source] = file_source(root, kinds);
  collect(root, "", Scan{path, text, kinds, out, std::move(kind), std::move(source)}, true);
  return out;
}

std::string with_value_replaced(const std::string& file_text, const SourcedNumber& v,
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
  if (innermost == nullptr && installed().texts.empty()) return nullptr;
  const std::string key = normalised(path);
  for (const ScopedYamlOverride* o = innermost; o != nullptr; o = o->outer_) {
    if (o->key_ == key) return &o->text_;
  }
  const auto edited = installed().texts.find(key);
  if (edited == installed().texts.end()) return nullptr;
  edited->second.read = true;
  return &edited->second.text;
}

namespace {

// The node at a dotted path ("a.b[2].c"); throws naming the first part not found.
YAML::Node node_at(const YAML::Node& root, const std::string& field, const InputLocation& where) {
  YAML::Node node;
  node.reset(root);
  std::size_t start = 0;
  while (start <= field.size()) {
    const std::size_t dot = field.find('.', start);
    std::string part = field.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    std::vector<std::size_t> indices;
    while (!part.empty() && part.back() == ']') {
      const std::size_t open = part.rfind('[');
      if (open == std::string::npos) throw InputError(where, "expected FIELD as a.b or a.b[0]");
      // Digits only: stoul alone would take "-1" for the largest index and "1x" for 1.
      const std::string index = part.substr(open + 1, part.size() - open - 2);
      if (index.empty() || index.size() > 9 ||
          !std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        throw InputError(where, "expected a list index (0, 1, ...) in [ ], got '" + index + "'");
      }
      indices.insert(indices.begin(), std::stoul(index));
      part.resize(open);
    }
    if (!part.empty()) {
      if (!node.IsMap() || !node[part]) throw InputError(where, "the file has no field '" + part + "' there");
      node.reset(node[part]);  // reset, not =: assigning a Node writes through to what it refers to
    }
    for (const std::size_t i : indices) {
      if (!node.IsSequence() || i >= node.size())
        throw InputError(where, fmt::format("the file has no list item [{}] there", i));
      node.reset(node[i]);
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return node;
}

// Where the flow collection opening at `open` closes (its '}' or ']'),
// skipping nested collections, quoted text and comments; npos if it does not.
std::size_t closing_bracket(const std::string& text, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\'' || c == '"') {  // a quoted scalar ('' escapes ' in single quotes, \ escapes in double)
      for (++i; i < text.size() && text[i] != c; ++i) {
        if (c == '"' && text[i] == '\\') ++i;
      }
    } else if (c == '#' && i > 0 && std::isspace(static_cast<unsigned char>(text[i - 1]))) {
      i = text.find('\n', i);
      if (i == std::string::npos) return i;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i;
    }
  }
  return std::string::npos;
}

int line_at(const std::string& text, std::size_t offset) {
  return 1 +
         static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

// The file's text with `key: value` added to `map` (the map at `parent`,
// the whole file where `parent` is empty) without moving any line: inside a
// flow map's braces, or after the last line of the file's top-level map.
// Sets `line` to the line it lands on; throws where the map is neither.
std::string with_field_added(const std::string& text, const YAML::Node& map, const std::string& parent,
                             const std::string& key, const std::string& value, const InputLocation& where,
                             int* line) {
  const YAML::Mark mark = map.Mark();
  const auto open = static_cast<std::size_t>(std::max(0, mark.pos));
  if (mark.pos >= 0 && open < text.size() && text[open] == '{') {
    const std::size_t close = closing_bracket(text, open);
    if (close == std::string::npos) throw InputError(where, "cannot find where the { } map closes");
    const std::size_t last = text.find_last_not_of(" \t\r\n", close - 1);
    const bool first = last == open || text[last] == ',';
    std::string out = text;
    out.insert(last + 1, (first ? " " : ", ") + key + ": " + value);
    *line = line_at(text, last + 1);
    return out;
  }
  if (parent.empty()) {
    std::string out = text;
    if (!out.empty() && out.back() != '\n') out += '\n';
    *line = line_at(out, out.size());
    return out + key + ": " + value + "\n";
  }
  throw InputError(where, "the file has no field '" + key + "' in '" + parent +
                              "', and --set adds a field only at the top level or inside a { } map");
}

// The file's text with the { } map or [ ] list `node` replaced by
// `replacement`; sets the edit's line and what the file said. Throws where
// the collection is not written in brackets on one line (replacing lines
// would move those after them, and every later message's line with them).
std::string with_flow_collection_replaced(const std::string& text, const YAML::Node& node,
                                          const std::string& replacement, ValueEdit* edit) {
  const YAML::Mark mark = node.Mark();
  const auto open = static_cast<std::size_t>(std::max(0, mark.pos));
  const bool bracketed = mark.pos >= 0 && open < text.size() && (text[open] == '{' || text[open] == '[');
  const std::size_t close = bracketed ? closing_bracket(text, open) : std::string::npos;
  if (close == std::string::npos || text.find('\n', open) < close) {
    throw InputError({edit->file, mark.line + 1, edit->field},
                     "--set replaces a map or list only where the file writes it in { } or [ ] on one line");
  }
  edit->line = mark.line + 1;
  edit->was = text.substr(open, close + 1 - open);
  std::string out = text;
  out.replace(open, close + 1 - open, replacement);
  return out;
}

// FILE:FIELD=VALUE, its FILE taken under the data folder where it is there.
ValueEdit parse_value_edit(const std::string& spec, const std::string& data_dir) {
  const std::size_t colon = spec.find(':');
  const std::size_t equals = spec.find('=', colon == std::string::npos ? 0 : colon);
  if (colon == std::string::npos || equals == std::string::npos || colon == 0 || equals == colon + 1 ||
      equals + 1 == spec.size()) {
    throw InputError({"", 0, "--set"}, fmt::format("expected FILE:FIELD=VALUE, got '{}'", spec));
  }
  ValueEdit edit;
  const std::string file = spec.substr(0, colon);
  edit.field = spec.substr(colon + 1, equals - colon - 1);
  edit.value = spec.substr(equals + 1);
  if (edit.value.find_first_of("\r\n") != std::string::npos) {  // it would move the lines after it
    throw InputError({"", 0, "--set"}, fmt::format("expected a VALUE on one line, got '{}'", edit.value));
  }
  const std::filesystem::path in_data = std::filesystem::path(data_dir) / file;
  edit.file = std::filesystem::exists(in_data) ? in_data.string() : file;
  return edit;
}

// The file's text with the edit made in place; the edit learns its line and
// what the file said there.
std::string edited_text(const std::string& text, ValueEdit& edit) {
  const InputLocation where{edit.file, 0, edit.field};
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError({edit.file, e.mark.line + 1, ""}, "malformed YAML: " + e.msg);
  }
  // A field the file lacks, in a map it has, is added (its loader then
  // checks it as it checks the file's own fields).
  const std::size_t dot = edit.field.rfind('.');
  const std::string parent = dot == std::string::npos ? "" : edit.field.substr(0, dot);
  const std::string last = edit.field.substr(dot == std::string::npos ? 0 : dot + 1);
  if (last.find('[') == std::string::npos) {
    const YAML::Node map = parent.empty() ? root : node_at(root, parent, where);
    if (map.IsMap() && !map[last]) {
      edit.was = "";
      return with_field_added(text, map, parent, last, edit.value, where, &edit.line);
    }
  }
  YAML::Node node = node_at(root, edit.field, where);
  const bool collection_given = edit.value.front() == '{' || edit.value.front() == '[';
  // A figure the file marks unknown gets a number as the user's assumption: its whole { } map replaced.
  if (node.IsMap() && node["unknown"] && !node["value"] && !collection_given) {
    std::string edited = with_flow_collection_replaced(
        text, node, "{value: " + edit.value + ", assumed: \"--set on the command line\"}", &edit);
    edit.was = "unknown: " + node["unknown"].Scalar();
    return edited;
  }
  // A { } map or [ ] list written on one line (a distribution, a list of
  // layers) is replaced whole by a value that is itself one; a sourced
  // value's number alone by a plain number.
  if ((node.IsMap() || node.IsSequence()) && (collection_given || !node["value"]))
    return with_flow_collection_replaced(text, node, edit.value, &edit);
  if (node.IsMap() && node["value"]) node.reset(node["value"]);  // a sourced value: set its number
  const YAML::Mark mark = node.Mark();
  const auto offset = static_cast<std::size_t>(std::max(0, mark.pos));
  if (!node.IsScalar() || mark.pos < 0 || text.compare(offset, node.Scalar().size(), node.Scalar()) != 0) {
    throw InputError({edit.file, mark.line + 1, edit.field},
                     "--set takes a field that holds one plain value");
  }
  edit.line = mark.line + 1;
  edit.was = node.Scalar();
  std::string edited = text;
  edited.replace(offset, edit.was.size(), edit.value);
  return edited;
}

}  // namespace

ValueEdit install_value_edit(const std::string& spec, const std::string& data_dir) {
  ValueEdit edit = parse_value_edit(spec, data_dir);
  const std::string key = normalised(edit.file);
  InstalledEdits& all = installed();
  // With the edits installed before this one (looked up here, so as not to count as a read).
  const auto earlier = all.texts.find(key);
  const std::string text = earlier != all.texts.end() ? earlier->second.text : read_text_file(edit.file);
  std::string edited = edited_text(text, edit);
  all.texts[key].text = std::move(edited);
  all.edits.push_back(edit);
  return edit;
}

const std::vector<ValueEdit>& installed_value_edits() { return installed().edits; }

std::vector<std::string> unread_edited_files() {
  std::vector<std::string> unread;
  for (const ValueEdit& edit : installed().edits) {
    const EditedText& text = installed().texts.at(normalised(edit.file));
    if (!text.read && std::find(unread.begin(), unread.end(), edit.file) == unread.end())
      unread.push_back(edit.file);
  }
  return unread;
}

std::string describe(const ValueEdit& edit, const std::string& data_dir) {
  return fmt::format("{} = {} in {}:{} ({})", edit.field, edit.value, path_in_data_dir(edit.file, data_dir),
                     edit.line,
                     edit.was.empty() ? "added: the file does not say it" : "the file says " + edit.was);
}

}  // namespace v41sim
