#include "sim/report/validation_view.h"

#include <fmt/format.h>

namespace v41sim {

Table validation_table(const std::vector<ValidationRow>& rows) {
  Table t("Kernel model vs published figures and our held-out measurements",
          {"reference", "GPU", "metric", "reference value", "predicted", "error", "within tolerance",
           "prior read off it"});
  int within = 0, measured = 0, out_of_sample = 0, out_of_sample_within = 0;
  std::string label;
  for (const ValidationRow& r : rows) {
    within += r.within_tolerance ? 1 : 0;
    if (r.reference.sets_prior.empty()) {
      ++out_of_sample;
      out_of_sample_within += r.within_tolerance ? 1 : 0;
    }
    if (r.reference.probe_kind == "held_out_measurement") {
      ++measured;
    } else {
      label = r.kernel_model;
    }
    t.add_row({r.reference.name, r.reference.gpu, r.reference.metric, format_fixed(r.reference.value, 1),
               format_fixed(r.predicted, 1), fmt::format("{:+.1f}%", r.error_pct),
               fmt::format("{} (±{:.0f}%)", r.within_tolerance ? "yes" : "no", r.reference.tolerance_pct),
               r.reference.sets_prior});
  }
  t.add_note(fmt::format("{} of {} within tolerance; published figures against the kernel model {}", within,
                         rows.size(), label));
  t.add_note(
      fmt::format("out of sample (no prior was read off them): {} of {} within tolerance; the rest "
                  "agree partly by construction until our own measurements replace the priors",
                  out_of_sample_within, out_of_sample));
  t.add_note("sources and probes: validation/published/*.yaml");
  t.add_note(measured > 0
                 ? fmt::format("{} held-out shapes of our own measurements (validation/measurements/), "
                               "each predicted with its GPU's fitted calibration",
                               measured)
                 : std::string("no held-out measurements yet: no GPU has been measured and calibrated"));
  return t;
}

nlohmann::json validation_json(const std::vector<ValidationRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const ValidationRow& r : rows) {
    out.push_back(
        {{"name", r.reference.name},
         {"kind", r.reference.probe_kind == "held_out_measurement" ? "held_out_measurement" : "published"},
         {"source", r.reference.source},
         {"gpu", r.reference.gpu},
         {"metric", r.reference.metric},
         {"reference", r.reference.value},
         {"predicted", r.predicted},
         {"error_pct", r.error_pct},
         {"tolerance_pct", r.reference.tolerance_pct},
         {"within_tolerance", r.within_tolerance},
         {"sets_prior", r.reference.sets_prior},
         {"kernel_model", r.kernel_model}});
  }
  return {{"references", out}};
}

}  // namespace v41sim
