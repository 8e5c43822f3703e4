// View of a MemoryFit for the `fit` command and the report.
#pragma once

#include <nlohmann/json.hpp>

#include "sim/capacity/memory_fit.h"
#include "sim/report/table.h"

namespace v41sim {

Table fit_table(const ModelAnalysis& model, const GpuProfile& gpu, const FitRequest& request,
                const FitResult& fit);
nlohmann::json fit_json(const ModelAnalysis& model, const GpuProfile& gpu, const FitRequest& request,
                        const FitResult& fit);

}  // namespace v41sim
