// SourcedValue: a number together with where it came from.
//
// The honesty rule in code: every hardware figure and every assumption the
// simulator prints carries one of these provenance kinds, and a figure whose
// source says "unknown" cannot be used silently: value() throws an InputError
// naming the file and field.
#pragma once

#include <optional>
#include <string>

#include "sim/common/input_error.h"
#include "sim/common/yaml_reader.h"

namespace v41sim {

enum class ProvenanceKind {
  kDatasheet,    // vendor datasheet or a source quoting it
  kPublished,    // a cited public figure that is not a datasheet (device query, blog, survey)
  kMeasured,     // one of our measurement files
  kCalibrated,   // fitted to measurements, with an error
  kAssumed,      // a named assumption
  kDerived,      // computed by v41sim from other figures
  kUnknown,      // no public source; the figure cannot be used
  kUnsupported,  // the hardware does not have it (e.g. FP4 tensor cores on Hopper)
};

struct Provenance {
  ProvenanceKind kind = ProvenanceKind::kAssumed;
  std::string note;  // source reference or the assumption in words

  std::string kind_name() const;
  std::string label() const;  // "datasheet: [S4] NVIDIA H100 datasheet"
};

class SourcedValue {
 public:
  SourcedValue() = default;
  SourcedValue(std::optional<double> value, Provenance provenance, InputLocation where = {});

  static SourcedValue derived(double value, std::string how);
  static SourcedValue assumed(double value, std::string assumption);

  bool known() const { return value_.has_value(); }
  // The number; throws InputError if the source says unknown / unsupported.
  double value() const;
  const Provenance& provenance() const { return provenance_; }
  const InputLocation& where() const { return where_; }

 private:
  std::optional<double> value_;
  Provenance provenance_;
  InputLocation where_;
};

// Reads {value: X, datasheet|published|measured|calibrated|assumed: "..."} or
// {unknown: "..."} / {unsupported: "..."}.
// Most figures must be positive; an error band or a widening may be zero.
// What a figure's value may be: positive, non-negative, or a count (a whole
// number >= 1: SMs, GPUs).
enum class ValueRange { kPositive, kNonNegative, kCount };
SourcedValue read_sourced_value(const YamlNode& node, ValueRange range = ValueRange::kPositive);

// What a physical figure may be, in the unit its file takes: wide enough for
// hardware not yet built, narrow enough to catch a number typed in another
// unit (4.8 meant as 4.8 TB/s is 4.8 B/s to a field in bytes per second),
// which would otherwise run a trillion times off, silently.
struct PlausibleRange {
  double lo;
  double hi;
  const char* unit;  // what the file's number counts, with an example
};
// read_sourced_value, refused at its value when the number lies outside `plausible`.
SourcedValue read_plausible_value(const YamlNode& node, const PlausibleRange& plausible,
                                  ValueRange range = ValueRange::kPositive);

}  // namespace v41sim
