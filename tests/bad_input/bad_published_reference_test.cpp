// A published reference with a probe field its kind does not have is refused
// with file, line and field, not silently ignored.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/common/catalog.h"
#include "sim/common/input_error.h"
#include "sim/validation/published_reference.h"

namespace v41sim {
namespace {

TEST(BadPublishedReference, UnknownProbeFieldIsNamed) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / "v41sim_bad_reference";
  fs::remove_all(root);
  fs::create_directories(root / "validation" / "published");
  std::ofstream(root / "validation" / "published" / "refs.yaml")
      << "references:\n"
         "  - name: a transfer\n"
         "    source: \"test\"\n"
         "    gpu: h200\n"
         "    probe: {kind: all_to_all, tokens: 128, hidden: 7168, top_k: 8, ep: 8, ep_per_node: 8,\n"
         "            bytes_per_value: 1, overlap: 1}\n"
         "    reference: {metric: us, value: 80}\n"
         "    tolerance_pct: 10\n";
  try {
    load_published_references(Catalog(root.string()));
    FAIL() << "an unknown probe field was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(e.where().file.find("refs.yaml"), std::string::npos);
    EXPECT_NE(e.where().field.find("overlap"), std::string::npos) << e.where().field;
    EXPECT_NE(std::string(e.what()).find("not a field of a 'all_to_all' probe"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace v41sim
