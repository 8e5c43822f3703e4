// v41sim: one binary, one subcommand per question.
// Bad input of any kind ends here as one line on stderr and exit status 2;
// a fault of the program's own as one line and exit status 1.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <exception>
#include <iostream>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "sim/cli/commands.h"
#include "sim/common/catalog.h"
#include "sim/common/input_error.h"
#include "sim/common/yaml_what_if.h"

namespace {

// Each --flag's value as given (--flag VALUE or --flag=VALUE).
std::vector<std::pair<std::string, std::string>> flag_values(int argc, char** argv) {
  std::vector<std::pair<std::string, std::string>> out;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!arg.starts_with("--")) continue;
    const std::size_t equals = arg.find('=');
    if (equals != std::string::npos) {
      out.emplace_back(arg.substr(0, equals), arg.substr(equals + 1));
    } else if (i + 1 < argc && !std::string(argv[i + 1]).starts_with("--")) {
      out.emplace_back(arg, argv[i + 1]);
    }
  }
  return out;
}

// A value's comma-separated items, empty ones included.
std::vector<std::string> comma_items(const std::string& value) {
  std::vector<std::string> items;
  for (std::size_t start = 0; start <= value.size();) {
    const std::size_t comma = std::min(value.find(',', start), value.size());
    items.push_back(value.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

// A flag's value is never empty, and its comma-separated values are
// alternatives to try, each once. An empty item ("8,,16", "h200,"): CLI11
// drops it and would run 8,16; a value given twice ("8,8"): the same
// variant, rate or sweep point run twice. Each slip is said instead.
void check_flag_value(const std::string& flag, const std::string& value) {
  // An empty value (a script's unset variable: --tpot-ms "$TPOT"): CLI11
  // would keep the default, or read 0.
  if (value.empty()) throw v41sim::InputError({"", 0, flag}, "expected a value, got an empty one");
  // --set's VALUE is YAML, commas and all: its own parser reads it.
  if (flag == "--set" || value.find(',') == std::string::npos) return;
  if (value.front() == ',' || value.back() == ',' || value.find(",,") != std::string::npos) {
    throw v41sim::InputError({"", 0, flag}, "expected items separated by single commas, got '" + value + "'");
  }
  std::set<std::string> seen;
  for (const std::string& item : comma_items(value)) {
    if (!seen.insert(item).second) {
      throw v41sim::InputError({"", 0, flag},
                               "expected each item once, got '" + item + "' twice in '" + value + "'");
    }
  }
}

// A whole number past 64 bits reaches a flag as the largest one CLI11 can
// convert, and one written with a leading 0 as octal (010 as 8): an error
// would then quote, or a run use, a number the user never typed. Each value
// of a whole-number flag is checked as typed.
void check_whole_number(const std::string& flag, const std::string& item, bool is_unsigned) {
  const std::size_t sign = item.starts_with('-') ? 1 : 0;
  const std::string digits = item.substr(std::min(sign, item.size()));
  if (digits.empty() ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return;  // CLI11 converts it or says it cannot
  if (digits.size() > 1 && digits.front() == '0') {
    throw v41sim::InputError({"", 0, flag}, "expected a whole number without leading zeros, got " + item);
  }
  uint64_t magnitude = 0;
  const bool fits =
      std::from_chars(digits.data(), digits.data() + digits.size(), magnitude).ec == std::errc{} &&
      magnitude <= (is_unsigned ? UINT64_MAX : static_cast<uint64_t>(INT64_MAX));
  if (!fits) {
    throw v41sim::InputError({"", 0, flag},
                             fmt::format("expected a whole number of at most {} in magnitude, got {}",
                                         is_unsigned ? UINT64_MAX : INT64_MAX, item));
  }
}

// CLI11 reads 0x3c as 60, and a hexadecimal float too: the run would use,
// and its output quote, a number the user did not write in decimal.
void check_decimal(const std::string& flag, const std::string& item) {
  const std::size_t sign = item.starts_with('-') || item.starts_with('+') ? 1 : 0;
  const std::string_view digits = std::string_view(item).substr(sign);
  if (digits.starts_with("0x") || digits.starts_with("0X"))
    throw v41sim::InputError({"", 0, flag}, "expected a decimal number, got " + item);
}

void check_numbers(const CLI::App& app) {
  std::vector<const CLI::App*> commands{&app};
  for (const CLI::App* command : app.get_subcommands()) commands.push_back(command);
  for (const CLI::App* command : commands) {
    for (const CLI::Option* option : command->get_options()) {
      const std::string type = option->get_type_name();
      const bool whole = type.starts_with("INT") || type.starts_with("UINT");
      if (!whole && !type.starts_with("FLOAT")) continue;
      for (const std::string& value : option->results()) {
        for (const std::string& item : comma_items(value)) {
          check_decimal(option->get_name(), item);
          if (whole) check_whole_number(option->get_name(), item, type.starts_with("UINT"));
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"v41sim: performance simulator and cost model for DeepSeek-V4.1-Flash serving"};
  v41sim::GlobalOptions global{v41sim::Catalog::default_data_dir()};
  app.add_option("--data-dir", global.data_dir,
                 "folder holding models/ and hw_profiles/ (default: $V41SIM_DATA_DIR or the source tree)");
  std::vector<std::string> edits;
  app.add_option(
      "--set", edits,
      "what if FILE:FIELD=VALUE (FILE under the data folder or a path; FIELD dotted, [i] for a list "
      "item; a sourced figure's number where FIELD names it): every command reads the file with that "
      "value, and says so; repeatable");
  std::function<void()> run;
  v41sim::register_commands(app, global, run, std::cout);
  try {
    for (const auto& [flag, value] : flag_values(argc, argv)) check_flag_value(flag, value);
    app.parse(argc, argv);
    check_numbers(app);
  } catch (const v41sim::InputError& e) {
    std::cerr << "v41sim: error: " << e.what() << "\n";
    return v41sim::kBadInputExitCode;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help: its text, exit 0
    // CLI11's own wording ("Could not convert: --seed = abc"), on one line as ours are.
    std::cerr << "v41sim: error: input: " << e.what() << " (--help after the command lists its options)\n";
    return v41sim::kBadInputExitCode;
  }
  try {
    // Installed before anything loads a file or starts a thread; each said on stderr.
    for (const std::string& spec : edits) {
      const v41sim::ValueEdit edit = v41sim::install_value_edit(spec, global.data_dir);
      std::cerr << "v41sim: what if: " << v41sim::describe(edit, global.data_dir) << "\n";
    }
    run();
    for (const std::string& file : v41sim::unread_edited_files()) {
      std::cerr << "v41sim: what if: this command did not read "
                << v41sim::path_in_data_dir(file, global.data_dir) << ": its --set changed nothing\n";
    }
  } catch (const v41sim::InputError& e) {
    std::cerr << "v41sim: error: " << e.what() << "\n";
    return v41sim::kBadInputExitCode;
  } catch (const std::exception& e) {  // a fault of ours: said plainly, never an abort
    std::cerr << "v41sim: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
