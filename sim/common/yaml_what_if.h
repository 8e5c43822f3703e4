// What-if edits of the YAML files the simulator reads, without writing them.
//
// find_sourced_numbers lists every number a file gives with its source
// (`{value: X, assumed: "why"}`, or datasheet, published, ...); ScopedYamlOverride makes YamlNode::load_file
// read an edited text of one file, on this thread, while it lives. Together
// they let a study re-run everything with one assumption moved, through the
// same loaders and checks as a user's own edit (a value the loader rejects is
// rejected the same way, naming the file, line and field).
#pragma once

#include <string>
#include <vector>

namespace v41sim {

struct SourcedNumber {
  std::string file;        // as given to find_sourced_numbers
  std::string field;       // dotted path of the map that holds the value and its source
  int line = 0;            // of the value, 1-based
  std::size_t offset = 0;  // byte offset of the value in the file's text
  std::string text;        // the value as written
  double value = 0;
  bool integer = false;  // written without a decimal point or exponent
  std::string kind;      // the source's kind: assumed, datasheet, published, measured or calibrated
  std::string source;    // its text
};

// The kinds of source a sourced number may give (sim/common/sourced_value.h).
inline const std::vector<std::string> kSourceKinds{"assumed", "datasheet", "published", "measured",
                                                   "calibrated"};

// Every `{value: <number>, <kind>: ...}` map in the file (as yaml_text reads
// it) whose kind is one of `kinds`, in file order. A file whose own source
// names its kind (`source: "assumed: why"`, as a workload whose every number
// is an assumption does) sources its plain numbers that way too: each
// non-zero number outside a sourced map, an `sla` map and a `priority` (what
// a user asks, not assumptions) is a figure, its field the number's own path. Throws InputError where the
// file cannot be read or parsed.
std::vector<SourcedNumber> find_sourced_numbers(const std::string& path,
                                                const std::vector<std::string>& kinds);

// The file's text with `v` written as `replacement` (every other byte kept,
// so line numbers in messages still hold).
std::string with_value_replaced(const std::string& file_text, const SourcedNumber& v,
                                const std::string& replacement);

std::string read_text_file(const std::string& path);
// The text YamlNode::load_file would read for `path`: an override's or an
// installed edit's where there is one, else the file's.
std::string yaml_text(const std::string& path);

// One value set from the command line (`--set FILE:FIELD=VALUE`).
struct ValueEdit {
  std::string file;   // as resolved (under the data folder where it lies there)
  std::string field;  // dotted path; a {value: ...} map's value where FIELD names the map
  int line = 0;
  std::string was;    // the value as the file writes it; empty where the file lacks the field
  std::string value;  // as set
};

// Parses FILE:FIELD=VALUE (FILE relative to `data_dir` or a path; FIELD dotted,
// `[i]` for a list item) and makes every later YamlNode::load_file of that
// file, on any thread, read its text with the field's value replaced, or,
// where the file lacks the field but has its map, with the field added
// (inside a { } map, or at the end of the top level: no line moves). Call
// before any thread starts: the edits are read, never changed, afterwards.
// Throws InputError naming the flag, the file or the field where the edit
// cannot be made (no such file or field, a field that is not one plain value).
ValueEdit install_value_edit(const std::string& spec, const std::string& data_dir);
// The edits installed so far, in order.
const std::vector<ValueEdit>& installed_value_edits();
// The files of installed edits that nothing has read since (each once, in
// the edits' order): a --set on a file the command does not use changes nothing.
std::vector<std::string> unread_edited_files();
// "draft.acceptance_length = 3.2 in models/deepseek_v4_1_flash.yaml:86 (the file says 3.51)"
std::string describe(const ValueEdit& edit, const std::string& data_dir);

class ScopedYamlOverride {
 public:
  ScopedYamlOverride(const std::string& path, std::string text);
  ~ScopedYamlOverride();
  ScopedYamlOverride(const ScopedYamlOverride&) = delete;
  ScopedYamlOverride& operator=(const ScopedYamlOverride&) = delete;

  // The text YamlNode::load_file reads for `path` on this thread (this
  // thread's overrides, then the installed value edits), or null where
  // neither names it.
  static const std::string* text_for(const std::string& path);

 private:
  std::string key_;  // the path, absolute and normalised
  std::string text_;
  const ScopedYamlOverride* outer_;  // the override this one hides, restored on exit
};

}  // namespace v41sim
