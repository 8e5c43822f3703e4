// v41sim: one binary, one subcommand per question.
// Bad input of any kind ends here as one line on stderr and exit status 2;
// a fault of the program's own as one line and exit status 1.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <exception>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "sim/cli/commands.h"
#include "sim/common/allocator_tuning.h"
#include "sim/common/catalog.h"
#include "sim/common/input_error.h"
#include "sim/common/yaml_what_if.h"

namespace {

// A flag's comma-separated values are alternatives to try, each once. An
// empty item ("8,,16", "h200,"): CLI11 drops it and would run 8,16; a value
// given twice ("8,8"): the same variant, rate or sweep point run twice. Each
// slip is said instead. --set is left to its own parser (its VALUE is YAML).
void check_list_items(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!arg.starts_with("--") || arg.starts_with("--set")) continue;
    const std::size_t equals = arg.find('=');
    const bool inline_value = equals != std::string::npos;
    if (!inline_value && (i + 1 >= argc || std::string(argv[i + 1]).starts_with("--"))) continue;
    const std::string flag = inline_value ? arg.substr(0, equals) : arg;
    const std::string value = inline_value ? arg.substr(equals + 1) : argv[i + 1];
    if (value.find(',') == std::string::npos) continue;
    if (value.front() == ',' || value.back() == ',' || value.find(",,") != std::string::npos) {
      throw v41sim::InputError({"", 0, flag},
                               "expected items separated by single commas, got '" + value + "'");
    }
    std::set<std::string> seen;
    for (std::size_t start = 0; start <= value.size();) {
      const std::size_t comma = std::min(value.find(',', start), value.size());
      const std::string item = value.substr(start, comma - start);
      if (!seen.insert(item).second) {
        throw v41sim::InputError({"", 0, flag},
                                 "expected each item once, got '" + item + "' twice in '" + value + "'");
      }
      start = comma + 1;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  v41sim::keep_freed_memory_in_process();
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
    check_list_items(argc, argv);
    app.parse(argc, argv);
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
  } catch (const v41sim::InputError& e) {
    std::cerr << "v41sim: error: " << e.what() << "\n";
    return v41sim::kBadInputExitCode;
  } catch (const std::exception& e) {  // a fault of ours: said plainly, never an abort
    std::cerr << "v41sim: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
