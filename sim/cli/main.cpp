// v41sim: one binary, one subcommand per question.
// Bad input of any kind ends here as one line on stderr and exit status 2.
#include <CLI/CLI.hpp>
#include <iostream>

#include "sim/cli/commands.h"
#include "sim/common/catalog.h"
#include "sim/common/input_error.h"

int main(int argc, char** argv) {
  CLI::App app{"v41sim: performance simulator and cost model for DeepSeek-V4.1-Flash serving"};
  v41sim::GlobalOptions global{v41sim::Catalog::default_data_dir()};
  app.add_option("--data-dir", global.data_dir,
                 "folder holding models/ and hw_profiles/ (default: $V41SIM_DATA_DIR or the source tree)");
  std::function<void()> run;
  v41sim::register_commands(app, global, run, std::cout);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : v41sim::kBadInputExitCode;
  }
  try {
    run();
  } catch (const v41sim::InputError& e) {
    std::cerr << "v41sim: error: " << e.what() << "\n";
    return v41sim::kBadInputExitCode;
  }
  return 0;
}
