#include "sim/common/sourced_value.h"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace v41sim {
namespace {

struct KindName {
  ProvenanceKind kind;
  const char* name;
  bool has_value;
};

constexpr std::array<KindName, 8> kKinds{{
    {ProvenanceKind::kDatasheet, "datasheet", true},
    {ProvenanceKind::kPublished, "published", true},
    {ProvenanceKind::kMeasured, "measured", true},
    {ProvenanceKind::kCalibrated, "calibrated", true},
    {ProvenanceKind::kAssumed, "assumed", true},
    {ProvenanceKind::kDerived, "derived", true},
    {ProvenanceKind::kUnknown, "unknown", false},
    {ProvenanceKind::kUnsupported, "unsupported", false},
}};

}  // namespace

std::string Provenance::kind_name() const {
  for (const KindName& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "?";
}

std::string Provenance::label() const { return note.empty() ? kind_name() : kind_name() + ": " + note; }

SourcedValue::SourcedValue(std::optional<double> value, Provenance provenance, InputLocation where)
    : value_(value), provenance_(std::move(provenance)), where_(std::move(where)) {}

SourcedValue SourcedValue::derived(double value, std::string how) {
  return SourcedValue(value, {ProvenanceKind::kDerived, std::move(how)});
}

SourcedValue SourcedValue::assumed(double value, std::string assumption) {
  return SourcedValue(value, {ProvenanceKind::kAssumed, std::move(assumption)});
}

double SourcedValue::value() const {
  if (!value_) {
    throw InputError(where_, "this figure is " + provenance_.label() + ", but the command needs it");
  }
  return *value_;
}

SourcedValue read_sourced_value(const YamlNode& node, ValueRange range) {
  node.expect_only({"value", "datasheet", "published", "measured", "calibrated", "assumed", "derived",
                    "unknown", "unsupported"});
  const KindName* found = nullptr;
  for (const KindName& k : kKinds) {
    if (!node.has(k.name)) continue;
    if (found) node.fail(std::string("give one source, not both '") + found->name + "' and '" + k.name + "'");
    found = &k;
  }
  if (!found) {
    node.fail(
        "a figure needs its source: one of datasheet, published, measured, calibrated, "
        "assumed, unknown, unsupported");
  }
  Provenance provenance{found->kind, node.required(found->name).as_string()};
  if (!found->has_value) {
    if (node.has("value")) node.fail(std::string("a figure marked '") + found->name + "' has no value");
    return SourcedValue(std::nullopt, provenance, node.location());
  }
  const YamlNode value = node.required("value");
  double number = 0;
  switch (range) {
    case ValueRange::kPositive:
      number = value.as_positive_double();
      break;
    case ValueRange::kNonNegative:
      number = value.as_non_negative_double();
      break;
    case ValueRange::kCount:
      number = static_cast<double>(value.as_positive_int());
      break;
  }
  return SourcedValue(number, provenance, node.location());
}

SourcedValue read_plausible_value(const YamlNode& node, const PlausibleRange& plausible, ValueRange range) {
  SourcedValue figure = read_sourced_value(node, range);
  if (!figure.known()) return figure;
  const double x = figure.value();
  if (x < plausible.lo || x > plausible.hi) {
    node.required("value").fail(fmt::format(
        "{:g} is out of the plausible range {:g} to {:g} for this figure, in {}: is it in another unit?", x,
        plausible.lo, plausible.hi, plausible.unit));
  }
  return figure;
}

}  // namespace v41sim
