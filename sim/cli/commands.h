// The v41sim subcommands. Each registers its flags on a CLI11 app and runs
// against a Catalog; main() turns InputError into exit status 2.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <ostream>
#include <string>

namespace v41sim {

struct GlobalOptions {
  std::string data_dir;
};

// Adds every subcommand to `app`; the chosen one's action is stored in `run`
// and executed by main() after parsing.
void register_commands(CLI::App& app, const GlobalOptions& global, std::function<void()>& run,
                       std::ostream& out);

}  // namespace v41sim
