// What-if edits of YAML files, and the assumption-sensitivity study built on
// them: which assumed figures move a served run, through the real loaders.
#include "sim/costing/assumption_sensitivity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "sim/common/input_error.h"
#include "sim/common/yaml_reader.h"
#include "sim/common/yaml_what_if.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/cost/step_cost.h"
#include "sim/cost/step_sensitivity.h"
#include "sim/graph/step_graph.h"
#include "tests/test_data.h"

namespace v41sim {
namespace {

std::string data(const std::string& file) { return std::string(V41SIM_SOURCE_DIR) + "/" + file; }

constexpr const char* kWhatIf =
    "name: what if\n"
    "rate: {value: 0.80, assumed: \"a guess\"}   # a comment kept\n"
    "nested:\n"
    "  count: {value: 5, assumed: \"counted\"}\n"
    "  sourced: {value: 7, datasheet: \"not an assumption\"}\n"
    "  list:\n"
    "    - {value: 2.5e3, assumed: \"in a list\"}\n";

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("v41sim_" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(YamlWhatIf, FindsEveryAssumedNumberWithWhereItIs) {
  const std::string path = write_temp("what_if.yaml", kWhatIf);
  const std::vector<SourcedNumber> found = find_sourced_numbers(path, {"assumed"});
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].field, "rate");
  EXPECT_EQ(found[0].line, 2);
  EXPECT_EQ(found[0].text, "0.80");
  EXPECT_DOUBLE_EQ(found[0].value, 0.8);
  EXPECT_FALSE(found[0].integer);
  EXPECT_EQ(found[0].kind, "assumed");
  EXPECT_EQ(found[0].source, "a guess");
  EXPECT_EQ(found[1].field, "nested.count");
  EXPECT_TRUE(found[1].integer);
  EXPECT_EQ(found[2].field, "nested.list[0]");
  EXPECT_EQ(found[2].line, 7);
  EXPECT_FALSE(found[2].integer);  // 2.5e3 is written as a real
  // Other kinds of source, asked for by name.
  const std::vector<SourcedNumber> datasheet = find_sourced_numbers(path, {"datasheet"});
  ASSERT_EQ(datasheet.size(), 1u);
  EXPECT_EQ(datasheet[0].field, "nested.sourced");
  EXPECT_EQ(datasheet[0].source, "not an assumption");
  EXPECT_EQ(find_sourced_numbers(path, {"assumed", "datasheet"}).size(), 4u);
  // Replacing one value keeps every other byte, comments and lines included.
  const std::string edited = with_value_replaced(kWhatIf, found[0], "0.6");
  EXPECT_EQ(std::string(edited).replace(edited.find("0.6"), 3, "0.80"), kWhatIf);
  EXPECT_NE(edited.find("rate: {value: 0.6, assumed: \"a guess\"}   # a comment kept\n"), std::string::npos);
}

// A file whose own source is an assumption (a workload) sources its plain
// numbers: each non-zero one outside a sourced map is a figure of that kind.
TEST(YamlWhatIf, AFileWhoseSourceIsAnAssumptionSourcesItsPlainNumbers) {
  const std::string text =
      "name: traffic\n"
      "source: \"assumed: a guessed shape\"\n"
      "arrival: {process: poisson, sessions_per_s: 0.5}\n"
      "session:\n"
      "  turns: {dist: uniform, min: 4, max: 40}\n"
      "  resumed: {fraction: 0}\n"
      "  price: {value: 7, datasheet: \"its own source\", floor: 3}\n"
      "  steps: [1.5, 2]\n"
      "mix:\n"
      "  - {workload: chat, share: 0.8, sla: {ttft_ms: 2000}, priority: 2}\n";
  const std::string path = write_temp("plain_numbers.yaml", text);
  const std::vector<SourcedNumber> found = find_sourced_numbers(path, {"assumed"});
  std::vector<std::string> fields;
  for (const SourcedNumber& f : found) fields.push_back(f.field);
  // The zero fraction is left out (no share of it moves it), and so is every
  // number of a map that gives its own source, and an SLA's limits (asked, not assumed).
  EXPECT_EQ(fields,
            (std::vector<std::string>{"arrival.sessions_per_s", "session.turns.min", "session.turns.max",
                                      "session.steps[0]", "session.steps[1]", "mix[0].share"}));
  EXPECT_EQ(found[0].kind, "assumed");
  EXPECT_EQ(found[0].source, "a guessed shape");
  EXPECT_EQ(found[0].line, 3);
  EXPECT_EQ(found[0].text, "0.5");
  EXPECT_TRUE(found[1].integer);
  // The map with its own source is found as its kind's figure, once.
  const std::vector<SourcedNumber> datasheet = find_sourced_numbers(path, {"datasheet"});
  ASSERT_EQ(datasheet.size(), 1u);
  EXPECT_EQ(datasheet[0].field, "session.price");
  // A file whose source names no kind, or another kind, has no plain figures.
  const std::string named = write_temp("plain_named.yaml", "source: \"a config file\"\nx: 1\n");
  EXPECT_TRUE(find_sourced_numbers(named, {"assumed"}).empty());
  EXPECT_TRUE(find_sourced_numbers(path, {"published"}).empty());
  // Moving one writes the file as a user's edit would.
  EXPECT_NE(move_figure(found[0], 1.25).file_text.find("sessions_per_s: 0.625}"), std::string::npos);
}

TEST(YamlWhatIf, AnOverrideIsSeenOnItsThreadWhileItLives) {
  const std::string path = write_temp("override.yaml", "x: 1\n");
  const auto x = [&path] { return YamlNode::load_file(path).required("x").as_int(); };
  {
    const ScopedYamlOverride edited(path, "x: 2\n");
    EXPECT_EQ(x(), 2);
    int64_t elsewhere = 0;
    std::thread([&] { elsewhere = x(); }).join();
    EXPECT_EQ(elsewhere, 1);  // other threads read the file
    {
      const ScopedYamlOverride again(path, "x: 3\n");
      EXPECT_EQ(x(), 3);
    }
    EXPECT_EQ(x(), 2);
    // The edit goes through the loader's checks and names the file and line.
    const ScopedYamlOverride bad(path, "x: two\n");
    try {
      x();
      FAIL() << "expected an InputError";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().file, path);
      EXPECT_EQ(e.where().line, 1);
    }
  }
  EXPECT_EQ(x(), 1);
}

// The tiny GQA model on one aggregated GPU, its kernel model from the priors:
// each assumed prior is moved and the run served again.
struct TinyStudy {
  Catalog catalog{V41SIM_SOURCE_DIR};
  std::string priors = data("validation/calibration/defaults.yaml");
  Sensitivity run(double swing) const {
    const auto serve = [this] {
      WorkloadSpec workload = load_workload_file(data("workloads/chat.yaml"));
      workload.sessions_per_s = 2;
      ServeOptions o;
      o.duration_s = 30;
      // No warm-up: every run counts the same requests (after one, which
      // turns arrive in the window depends on how fast the runs serve).
      o.warm_up_s = 0;
      o.drain = true;
      return serve_deployment(catalog, analyze_model(load_model_file(data("tests/data/tiny_gqa.yaml"))),
                              load_deployment_file(data("tests/data/aggregated.yaml")), workload, o);
    };
    return assumption_sensitivity({priors}, serve, swing);
  }
};

TEST(AssumptionSensitivity, MovesEachAssumptionThroughTheLoaders) {
  const TinyStudy t;
  const Sensitivity s = t.run(0.25);
  const std::size_t assumed = find_sourced_numbers(t.priors, {"assumed"}).size();
  ASSERT_EQ(s.effects.size(), assumed);
  const auto effect = [&s](const std::string& field) {
    const auto it = std::find_if(s.effects.begin(), s.effects.end(),
                                 [&](const AssumptionEffect& e) { return e.figure.field == field; });
    EXPECT_NE(it, s.effects.end()) << field;
    return *it;
  };
  // The launch overhead is paid by every kernel the prefill launches: it moves the first token.
  // (Not the price: this light load is served in full either way, so the GPU-hours per output
  // token stay.)
  const AssumptionEffect launch = effect("launch_overhead_us");
  EXPECT_DOUBLE_EQ(launch.low.value, 3.0);
  EXPECT_DOUBLE_EQ(launch.high.value, 5.0);
  // (The mean: a p99 of this short run's hundred-odd first tokens is one or two
  // requests, whose waits behind other steps can move either way.)
  EXPECT_LT(launch.low.outcome.result.ttft_ms.mean, s.baseline.result.ttft_ms.mean);
  EXPECT_LT(s.baseline.result.ttft_ms.mean, launch.high.outcome.result.ttft_ms.mean);
  EXPECT_EQ(launch.usd_change, 0);
  // A share of 1 moved up is refused by the loader, with its reason; moved down it ran.
  const AssumptionEffect unused = effect("classes.indexer.widening_overlap");
  EXPECT_NE(unused.high.rejected.find("at most 1"), std::string::npos) << unused.high.rejected;
  EXPECT_TRUE(unused.low.rejected.empty());
  // The tiny GQA model has no indexer keys to widen: moving it changes nothing.
  EXPECT_EQ(unused.usd_change, 0);
  EXPECT_EQ(unused.tpot_p99_change_ms, 0);
  // Largest $ change first.
  for (std::size_t i = 1; i < s.effects.size(); ++i)
    EXPECT_GE(s.effects[i - 1].usd_change, s.effects[i].usd_change);
  // The baseline is the file as it is: nothing stays overridden after the study.
  EXPECT_EQ(t.run(0.25).baseline.seeds.front().usd_per_million_output,
            s.baseline.seeds.front().usd_per_million_output);
}

// The same moves for one step's time on the kernel model: the CUDA-graph
// replay overhead is paid per kernel node of a decode step, so it moves it
// (up with the overhead), and figures come largest change first.
TEST(StepSensitivity, MovesTheStepTimeFigureByFigure) {
  const std::string priors = data("validation/calibration/defaults.yaml");
  const std::string gpu = data("hw_profiles/h200.yaml");
  const auto step_us = [&] {
    const ModelAnalysis model = analyze_model(load_model_file(data("tests/data/tiny_gqa.yaml")));
    const GpuCostModel cost(V41SIM_SOURCE_DIR, gpu, true);
    StepShape shape;
    shape.phase = Phase::kDecode;
    shape.batch = 8;
    shape.context = 4096;
    shape.ep = 1;
    return time_step(build_step_graph(model, shape), cost.cost()).total_us;
  };
  const StepSensitivity s = step_sensitivity({priors, gpu}, step_us, 0.25);
  EXPECT_DOUBLE_EQ(s.baseline_us, step_us());
  const auto it = std::find_if(s.effects.begin(), s.effects.end(), [](const StepEffect& e) {
    return e.figure.field == "graph_replay_overhead_us";
  });
  ASSERT_NE(it, s.effects.end());
  EXPECT_LT(it->low.outcome, s.baseline_us);
  EXPECT_GT(it->high.outcome, s.baseline_us);
  EXPECT_GT(it->change_pct, 0);
  for (std::size_t i = 1; i < s.effects.size(); ++i)
    EXPECT_GE(s.effects[i - 1].change_pct, s.effects[i].change_pct);
}

TEST(AssumptionSensitivity, ASwingOutsideZeroToOneIsAnInputError) {
  const TinyStudy t;
  for (const double swing : {0.0, 1.0, -0.2}) {
    try {
      t.run(swing);
      FAIL() << "expected an InputError for " << swing;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().field, "--swing");
    }
  }
}

}  // namespace
}  // namespace v41sim
