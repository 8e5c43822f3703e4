// --set's edits of a YAML file's text: a value replaced, or a field the file
// lacks added, with every other line where it was.
#include "sim/common/yaml_what_if.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/common/input_error.h"

namespace v41sim {
namespace {

// A file of its own for each test: an installed edit lasts for the process.
std::string write_yaml(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("v41sim_what_if_" + name + ".yaml");
  std::ofstream(path) << text;
  return path.string();
}

int line_of(const YAML::Node& node) { return node.Mark().line + 1; }

TEST(ValueEdit, AddsAFieldInsideAFlowMapWithoutMovingALine) {
  const std::string path = write_yaml("flow",
                                      "name: x  # a {comment}\n"
                                      "pool: {a: 1, b: '}{',\n"
                                      "       c: \"x}\"}  # }\n"
                                      "empty: {}\n"
                                      "trailing: {a: 1, }\n"
                                      "after: 2\n");
  const ValueEdit added = install_value_edit(path + ":pool.d=4", "");
  EXPECT_EQ(added.was, "");
  EXPECT_EQ(added.line, 3);
  install_value_edit(path + ":empty.e=5", "");
  install_value_edit(path + ":trailing.f=6", "");
  const YAML::Node edited = YAML::Load(yaml_text(path));
  EXPECT_EQ(edited["pool"]["d"].as<int>(), 4);
  EXPECT_EQ(edited["pool"]["b"].as<std::string>(), "}{");
  EXPECT_EQ(edited["pool"]["c"].as<std::string>(), "x}");
  EXPECT_EQ(edited["empty"]["e"].as<int>(), 5);
  EXPECT_EQ(edited["trailing"]["a"].as<int>(), 1);
  EXPECT_EQ(edited["trailing"]["f"].as<int>(), 6);
  EXPECT_EQ(line_of(edited["after"]), 6);
  EXPECT_NE(describe(added, "").find("(added: the file does not say it)"), std::string::npos);
}

TEST(ValueEdit, AddsATopLevelFieldAfterTheLastLine) {
  const std::string path = write_yaml("top", "name: x\nblock:\n  a: 1\n# last, no newline");
  const ValueEdit added = install_value_edit(path + ":extra=7", "");
  EXPECT_EQ(added.line, 5);
  const YAML::Node edited = YAML::Load(yaml_text(path));
  EXPECT_EQ(edited["extra"].as<int>(), 7);
  EXPECT_EQ(edited["block"]["a"].as<int>(), 1);
  EXPECT_EQ(line_of(edited["block"]["a"]), 3);
}

// Inside a block map, a line would have to be inserted and every later line
// would move (and with it what error messages say): refused, naming the map.
TEST(ValueEdit, RefusesToAddInsideANestedBlockMap) {
  const std::string path = write_yaml("block", "name: x\nblock:\n  a: 1\n");
  try {
    install_value_edit(path + ":block.b=2", "");
    FAIL() << "added a field inside a block map";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no field 'b' in 'block'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(install_value_edit(path + ":missing.b=2", ""), InputError);       // no such map
  EXPECT_THROW(install_value_edit(path + ":block.a[0]=2", ""), InputError);      // not a list
  EXPECT_THROW(install_value_edit(path + ":name=y\nother: 1", ""), InputError);  // would move lines
}

// A distribution or a list written in brackets on one line is replaced whole
// (what a what-if on a workload's shape needs); a sourced value takes a
// plain number as its number, or a map as a new value with its source.
TEST(ValueEdit, ReplacesAOneLineMapOrListWhole) {
  const std::string path = write_yaml("collection",
                                      "out: {dist: lognormal, mean: 500}  # {x}\n"
                                      "ids: [1, [2, 3]]\n"
                                      "price: {value: 1.4, published: \"a\"}\n"
                                      "cost: {value: 2.0, published: \"b\"}\n"
                                      "after: 2\n");
  const ValueEdit out = install_value_edit(path + ":out={dist: fixed, value: 1}", "");
  EXPECT_EQ(out.was, "{dist: lognormal, mean: 500}");
  EXPECT_EQ(out.line, 1);
  install_value_edit(path + ":ids=[4]", "");
  install_value_edit(path + ":price=1.9", "");
  install_value_edit(path + ":cost={value: 3, assumed: \"mine\"}", "");
  const YAML::Node edited = YAML::Load(yaml_text(path));
  EXPECT_EQ(edited["out"]["dist"].as<std::string>(), "fixed");
  EXPECT_FALSE(edited["out"]["mean"]);
  EXPECT_EQ(edited["ids"].size(), 1u);
  EXPECT_EQ(edited["ids"][0].as<int>(), 4);
  EXPECT_EQ(edited["price"]["value"].as<double>(), 1.9);
  EXPECT_EQ(edited["price"]["published"].as<std::string>(), "a");
  EXPECT_EQ(edited["cost"]["value"].as<double>(), 3);
  EXPECT_EQ(edited["cost"]["assumed"].as<std::string>(), "mine");
  EXPECT_FALSE(edited["cost"]["published"]);
  EXPECT_EQ(line_of(edited["after"]), 5);
  EXPECT_NE(describe(out, "").find("(the file says {dist: lognormal, mean: 500})"), std::string::npos);
}

// Replacing lines would move every later line: a collection over several
// lines, or a block map, is refused with what --set can replace.
TEST(ValueEdit, RefusesToReplaceAMapOverSeveralLines) {
  const std::string path = write_yaml("multiline", "ids: [1,\n      2]\nblock:\n  a: 1\n");
  for (const std::string field : {"ids=[3]", "block={a: 2}"}) {
    try {
      install_value_edit(path + ":" + field, "");
      FAIL() << "replaced " << field;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("only where the file writes it in { } or [ ] on one line"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace v41sim
