// v41sim_measure: the measuring harness. Built with the CUDA toolkit and
// CMake alone (the GPU machine reaches no package registry).
//
// First the device's own ceilings (streaming copy, dense FP8 and BF16 GEMM, FP32 FMA
// chains); then, group by group, each kernel: its correctness check against
// the CPU reference (a kernel that fails is not timed), then CUDA-event
// timings after warm-up (median, min, max of many runs) over the shapes the
// simulator uses, on device-generated random inputs, rotating buffers larger
// than L2 where a kernel would otherwise re-read from it. Every group runs in
// its own child process (isolated_run.h), so one crash or hang costs one
// group. Output: <out>/kernels.csv (validation/measurements/README.md).
//
// The file is rewritten after every group, naming the groups not run yet
// under failed_groups, so a run stopped from outside leaves an honest file;
// --deadline S stops starting groups (and checks) S seconds after the start.
//
//   v41sim_measure --out validation/measurements/h200 [--quick] [--only g1,g2] [--group-timeout S]
//   [--deadline S] [--checks-from FILE]
//   v41sim_measure --checks [--record FILE] [--group-timeout S] [--deadline S]
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/checks/device_checks.h"
#include "kernels/common/cuda_device.h"
#include "kernels/gemm/expert_gemm.h"
#include "kernels/harness/check_record.h"
#include "kernels/harness/isolated_run.h"
#include "kernels/harness/measure_groups.h"
#include "kernels/harness/run_deadline.h"

namespace v41sim::kernels {
namespace {

// What a group's run is told besides the device: the sweep's size, and
// which checks the driver ran alone before the groups.
struct GroupOptions {
  bool quick = false;
  WgmmaPathsPassed expert_gemm_wgmma;  // the wgmma paths' checks, each in a process of its own
  bool indexer_wgmma = false;          // the FP8 wgmma indexer logits' check, likewise
  bool indexer_wgmma_decode = false;   // the FP8 wgmma decode logits' check, likewise
  bool sparse_decode_wgmma = false;    // the BF16 wgmma sparse decode's check, likewise
};

struct Group {
  const char* name;
  int (*run)(const RowWriter&, const Device&, const GroupOptions&);
};

// In the order a deadline should cut them: what weighs most in a step first
// (the GEMMs: most of a prefill step and of a decode step's weight reads;
// then attention and the indexer), the small memory-bound kernels last.
const std::vector<Group>& groups() {
  static const std::vector<Group> all{
      {"expert_gemm", [](const RowWriter& w, const Device&,
                         const GroupOptions& g) { return measure_gemm(w, g.quick, g.expert_gemm_wgmma); }},
      {"dense_gemm", [](const RowWriter& w, const Device&,
                        const GroupOptions& g) { return measure_dense_gemm(w, g.quick); }},
      {"sparse_decode",
       [](const RowWriter& w, const Device& d, const GroupOptions& g) {
         return measure_sparse_decode(w, d, g.quick, g.sparse_decode_wgmma);
       }},
      {"indexer_decode",
       [](const RowWriter& w, const Device&, const GroupOptions& g) {
         return measure_indexer_decode(w, g.quick, g.indexer_wgmma_decode);
       }},
      {"indexer_prefill",
       [](const RowWriter& w, const Device&, const GroupOptions& g) {
         return measure_indexer_prefill(w, g.quick, g.indexer_wgmma);
       }},
      {"mhc",
       [](const RowWriter& w, const Device& d, const GroupOptions& g) { return measure_mhc(w, d, g.quick); }},
      {"mxfp4_kv", [](const RowWriter& w, const Device& d,
                      const GroupOptions& g) { return measure_mxfp4(w, d, g.quick); }},
      {"compress", [](const RowWriter& w, const Device& d,
                      const GroupOptions& g) { return measure_compress(w, d, g.quick); }},
      {"engram",
       [](const RowWriter& w, const Device&, const GroupOptions& g) { return measure_engram(w, g.quick); }},
  };
  return all;
}

double metadata_number(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::string prefix = "# " + key + ": ";
    if (line.rfind(prefix, 0) == 0) return std::stod(line.substr(prefix.size()));
  }
  return 0;
}

struct Options {
  std::string out_dir;
  bool checks_only = false;
  bool quick = false;
  std::vector<std::string> only;
  unsigned group_timeout_s = 300;
  double deadline_s = 0;    // 0: none
  std::string record_file;  // --checks: the outcomes written here as well (check_record.h)
  std::string checks_from;  // a sweep: the outcomes of an earlier --checks run on this device
};

int usage() {
  std::fprintf(
      stderr,
      "usage: v41sim_measure --out DIR [--quick] [--only GROUP[,GROUP...]] [--group-timeout S] [--deadline "
      "S] [--checks-from FILE]\n"
      "       v41sim_measure --checks [--record FILE] [--group-timeout S] [--deadline S]   (every kernel "
      "against its CPU reference; no timing)\n"
      "--record FILE keeps the checks' outcomes; --checks-from FILE lets them stand for the checks a sweep "
      "runs alone first\n"
      "groups:");
  for (const Group& g : groups()) std::fprintf(stderr, " %s", g.name);
  std::fprintf(stderr, "\n");
  return 2;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--out" && i + 1 < argc) {
      o.out_dir = argv[++i];
    } else if (arg == "--quick") {
      o.quick = true;
    } else if (arg == "--checks") {
      o.checks_only = true;
    } else if (arg == "--only" && i + 1 < argc) {
      std::stringstream names(argv[++i]);
      for (std::string name; std::getline(names, name, ',');) {
        const bool known =
            std::any_of(groups().begin(), groups().end(), [&](const Group& g) { return name == g.name; });
        if (!known) {
          std::fprintf(stderr, "--only: unknown group '%s'\n", name.c_str());
          return false;
        }
        o.only.push_back(name);
      }
    } else if (arg == "--group-timeout" && i + 1 < argc) {
      const int seconds = std::atoi(argv[++i]);
      if (seconds <= 0) {
        std::fprintf(stderr, "--group-timeout: expected a positive number of seconds\n");
        return false;
      }
      o.group_timeout_s = static_cast<unsigned>(seconds);
    } else if (arg == "--record" && i + 1 < argc) {
      o.record_file = argv[++i];
    } else if (arg == "--checks-from" && i + 1 < argc) {
      o.checks_from = argv[++i];
    } else if (arg == "--deadline" && i + 1 < argc) {
      o.deadline_s = std::atof(argv[++i]);
      if (o.deadline_s <= 0) {
        std::fprintf(stderr, "--deadline: expected a positive number of seconds\n");
        return false;
      }
    } else {
      return false;
    }
  }
  return o.checks_only || !o.out_dir.empty();
}

// One check in a process of its own (a hang or a sticky CUDA error costs
// that check alone): its outcome, or why there is none.
CheckOutcome check_in_own_process(const NamedCheck& check, unsigned timeout_s) {
  const GroupOutcome outcome = run_isolated(
      [&](int fd) {
        std::string why;
        if (!cuda_device_available(&why)) {  // said on the check's own line
          const std::string line = "no usable CUDA device: " + why;
          if (::write(fd, line.data(), line.size()) < 0) return 2;  // not even that could be said
          return 1;
        }
        const CheckResult r = check.run();
        const std::string line = r.ok ? "" : r.detail;
        if (::write(fd, line.data(), line.size()) < 0) return 1;
        return r.ok ? 0 : 1;
      },
      timeout_s);
  std::string detail = outcome.ok ? "" : (outcome.text.empty() ? outcome.why : outcome.text);
  std::replace(detail.begin(), detail.end(), '\n', ' ');
  return {outcome.ok, detail};
}

const NamedCheck& named_check(const std::string& name) {
  for (const NamedCheck& check : all_checks()) {
    if (name == check.name) return check;
  }
  throw std::logic_error("no device check named " + name);
}

// Every correctness check, each in its own process: PASS or FAIL with what
// differed; with --record, each outcome also appended to that file as it comes.
int run_checks(const Options& o) {
  const RunDeadline deadline(o.deadline_s);
  if (!o.record_file.empty() && !std::ofstream(o.record_file, std::ios::trunc)) {
    std::fprintf(stderr, "--record %s: the file cannot be written\n", o.record_file.c_str());
    return 2;
  }
  int failed = 0;
  for (const NamedCheck& check : all_checks()) {
    const unsigned timeout_s = deadline.timeout_for(o.group_timeout_s);
    if (timeout_s == 0) {
      ++failed;
      std::printf("%-28s NOT RUN: deadline\n", check.name);
      continue;
    }
    const CheckOutcome outcome = check_in_own_process(check, timeout_s);
    failed += outcome.ok ? 0 : 1;
    std::printf("%-28s %s%s%s\n", check.name, outcome.ok ? "PASS" : "FAIL", outcome.ok ? "" : ": ",
                outcome.detail.c_str());
    std::fflush(stdout);
    if (!o.record_file.empty())
      std::ofstream(o.record_file, std::ios::app) << check_record_line(check.name, outcome);
  }
  std::printf("%d of %zu checks failed\n", failed, all_checks().size());
  return failed == 0 ? 0 : 1;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : "; ") + part;
  return text;
}

// Writes <out>/kernels.csv whole (a temporary file renamed over it, so a
// run stopped mid-write never leaves half a file); `failed` names the groups
// without rows, those not run yet included.
void write_csv(const std::string& out_dir, const std::string& metadata, const std::string& rows,
               const std::vector<std::string>& failed) {
  namespace fs = std::filesystem;
  fs::create_directories(out_dir);
  const std::string failed_text = joined(failed);
  const fs::path file = fs::path(out_dir) / "kernels.csv",
                 partial = fs::path(out_dir) / "kernels.csv.partial";
  {
    std::ofstream out(partial);
    out << metadata << "# failed_groups: " << (failed_text.empty() ? "none" : failed_text) << "\n"
        << kCsvHeader << "\n"
        << rows;
  }
  fs::rename(partial, file);
}

// A check of one of the newest kernels (Hopper's wgmma ones, which a
// descriptor or barrier fault could hang or leave a sticky CUDA error in),
// run in a process of its own before the groups: failing, it costs that
// kernel's own rows, not its group's others. Where an earlier --checks run on
// this device recorded the check, its outcome stands (a hung check is not
// waited for twice). The CSV's metadata says under `key` whether it passed,
// and, after `failed` ("not timed" for a kernel), why not.
bool passes_alone(const std::string& key, const std::string& check_name, unsigned timeout_s,
                  const std::map<std::string, CheckOutcome>& recorded, std::string& metadata,
                  const std::string& failed = "not timed") {
  const auto earlier = recorded.find(check_name);
  const bool was_recorded = earlier != recorded.end();
  if (!was_recorded && timeout_s == 0) {
    metadata += "# " + key + ": not checked (deadline)\n";
    return false;
  }
  const CheckOutcome outcome =
      was_recorded ? earlier->second : check_in_own_process(named_check(check_name), timeout_s);
  const std::string where = was_recorded ? " (in the checks run before)" : "";
  metadata += "# " + key + ": " +
              (outcome.ok ? "passed its check" + where : failed + ": " + outcome.detail + where) + "\n";
  if (!outcome.ok)
    std::printf("%s: %s: %s%s\n", key.c_str(), failed.c_str(), outcome.detail.c_str(), where.c_str());
  return outcome.ok;
}

// The outcomes an earlier --checks run recorded, if it was asked for.
std::map<std::string, CheckOutcome> recorded_checks(const Options& o) {
  if (o.checks_from.empty()) return {};
  std::ifstream in(o.checks_from);
  if (!in) {
    std::fprintf(stderr, "--checks-from %s: cannot be read; checking alone instead\n", o.checks_from.c_str());
    return {};
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_check_record(text.str());
}

int run(const Options& o) {
  const RunDeadline deadline(o.deadline_s);
  const GroupOutcome ceilings = run_isolated(
      [](int fd) {
        std::string why;
        if (!cuda_device_available(&why)) {
          std::fprintf(stderr, "no usable CUDA device: %s\n", why.c_str());
          return 1;
        }
        return measure_ceilings(fd);
      },
      std::max(1u, deadline.timeout_for(o.group_timeout_s)));
  if (!ceilings.ok) {
    std::fprintf(stderr, "v41sim_measure: measuring the device's ceilings failed (%s); nothing written\n",
                 ceilings.why.c_str());
    return 1;
  }
  Ceilings c;
  c.copy_gbps = metadata_number(ceilings.text, "copy_gbps");
  c.fp8_dense_tflops = metadata_number(ceilings.text, "fp8_dense_tflops");
  c.bf16_dense_tflops = metadata_number(ceilings.text, "bf16_dense_tflops");
  c.fp32_fma_tflops = metadata_number(ceilings.text, "fp32_fma_tflops");
  c.host_to_device_gbps = metadata_number(ceilings.text, "host_to_device_gbps");
  std::string metadata, rows;
  auto split = [&](const std::string& text) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      (line.rfind('#', 0) == 0 ? metadata : rows) += line + "\n";
  };
  split(ceilings.text);
  std::vector<const Group*> selected;
  for (const Group& g : groups()) {
    if (o.only.empty() || std::find(o.only.begin(), o.only.end(), g.name) != o.only.end())
      selected.push_back(&g);
  }
  GroupOptions options;
  options.quick = o.quick;
  const auto selected_group = [&selected](const char* name) {
    return std::any_of(selected.begin(), selected.end(),
                       [name](const Group* g) { return g->name == std::string(name); });
  };
  const auto alone_timeout = [&] { return std::min(60u, deadline.timeout_for(o.group_timeout_s)); };
  const std::map<std::string, CheckOutcome> recorded = recorded_checks(o);
  const auto alone = [&](const char* key, const char* check_name, const char* failed = "not timed") {
    return passes_alone(key, check_name, alone_timeout(), recorded, metadata, failed);
  };
  // Which wgmma operand layouts the device reads as our kernels assume (the
  // metadata says which not, and how), before those kernels' own checks.
  if (selected_group("expert_gemm") || selected_group("indexer_prefill") ||
      selected_group("indexer_decode") || selected_group("sparse_decode"))
    alone("wgmma_layouts", "wgmma_layouts", "read otherwise");
  if (selected_group("expert_gemm")) {
    options.expert_gemm_wgmma.lockstep = alone("expert_gemm_wgmma_lockstep", "expert_gemm_w4a8_wgmma");
    options.expert_gemm_wgmma.warp_specialized =
        alone("expert_gemm_wgmma_warp_specialized", "expert_gemm_w4a8_wgmma_ws");
  }
  if (selected_group("indexer_prefill"))
    options.indexer_wgmma = alone("indexer_logits_wgmma", "indexer_wgmma");
  if (selected_group("indexer_decode"))
    options.indexer_wgmma_decode = alone("indexer_decode_logits_wgmma", "indexer_wgmma_decode");
  if (selected_group("sparse_decode"))
    options.sparse_decode_wgmma = alone("sparse_decode_wgmma", "sparse_decode_wgmma");
  std::vector<std::string> failed;
  // The file as it stands after `done` groups: the rest named as not run yet.
  const auto write = [&](std::size_t done) {
    std::vector<std::string> named = failed;
    for (std::size_t i = done; i < selected.size(); ++i)
      named.push_back(std::string(selected[i]->name) + " (not run)");
    write_csv(o.out_dir, metadata, rows, named);
  };
  write(0);
  for (std::size_t i = 0; i < selected.size(); ++i) {
    const Group& g = *selected[i];
    const unsigned timeout_s = deadline.timeout_for(o.group_timeout_s);
    if (timeout_s == 0) {
      std::fprintf(stderr, "group %s not run: the deadline is near\n", g.name);
      failed.push_back(std::string(g.name) + " (not run: deadline)");
      write(i + 1);
      continue;
    }
    std::printf("== %s\n", g.name);
    const GroupOutcome outcome =
        run_isolated([&](int fd) { return g.run(RowWriter(fd, c), query_device(), options); }, timeout_s);
    split(outcome.text);  // rows finished before a failure are kept
    if (!outcome.ok) {
      std::fprintf(stderr, "group %s failed: %s\n", g.name, outcome.why.c_str());
      failed.push_back(std::string(g.name) + " (" + outcome.why + ")");
    }
    write(i + 1);
  }
  std::printf("wrote %s%s\n", (std::filesystem::path(o.out_dir) / "kernels.csv").c_str(),
              failed.empty() ? "" : (" without the failed groups: " + joined(failed)).c_str());
  return failed.empty() ? 0 : 1;
}

}  // namespace
}  // namespace v41sim::kernels

int main(int argc, char** argv) {
  v41sim::kernels::Options options;
  if (!v41sim::kernels::parse(argc, argv, options)) return v41sim::kernels::usage();
  return options.checks_only ? v41sim::kernels::run_checks(options) : v41sim::kernels::run(options);
}
