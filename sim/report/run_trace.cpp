#include "sim/report/run_trace.h"

#include <fmt/format.h>

namespace v41sim {

nlohmann::json run_trace(const ServingResult& result, const DeploymentSpec& d) {
  nlohmann::json events = nlohmann::json::array();
  const int64_t requests_pid = 0;
  const int64_t first_prefill_pid = 1;
  const int64_t first_decode_pid = first_prefill_pid + d.prefill.instances;
  auto process = [&events](int64_t pid, const std::string& name) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}});
  };
  process(requests_pid, "requests");
  for (int64_t i = 0; i < d.prefill.instances; ++i)
    process(first_prefill_pid + i, fmt::format("prefill instance {}", i));
  for (int64_t i = 0; i < d.decode.instances; ++i)
    process(first_decode_pid + i, fmt::format("decode instance {}", i));
  for (const TraceSpan& s : result.trace) {
    switch (s.kind) {
      case TraceSpan::Kind::kPrefillStep:
      case TraceSpan::Kind::kDecodeStep: {
        const bool prefill = s.kind == TraceSpan::Kind::kPrefillStep;
        events.push_back({{"name", prefill ? "prefill step" : "decode step"},
                          {"ph", "X"},
                          {"pid", (prefill ? first_prefill_pid : first_decode_pid) + s.instance},
                          {"tid", 0},
                          {"ts", s.start_us},
                          {"dur", s.duration_us},
                          {"args", {{"sequences", s.size}}}});
        break;
      }
      case TraceSpan::Kind::kRequest:
      case TraceSpan::Kind::kRequestPrefill:
      case TraceSpan::Kind::kRequestKvTransfer:
      case TraceSpan::Kind::kRequestDecode: {
        const char* name = s.kind == TraceSpan::Kind::kRequest             ? "request"
                           : s.kind == TraceSpan::Kind::kRequestPrefill    ? "prefill"
                           : s.kind == TraceSpan::Kind::kRequestKvTransfer ? "KV transfer"
                                                                           : "decode";
        const nlohmann::json base{
            {"name", name}, {"cat", "request"}, {"id", s.instance}, {"pid", requests_pid}};
        nlohmann::json begin = base;
        begin["ph"] = "b";
        begin["ts"] = s.start_us;
        begin["args"] = {{"request", s.instance}, {"output_tokens", s.size}};
        nlohmann::json end = base;
        end["ph"] = "e";
        end["ts"] = s.start_us + s.duration_us;
        events.push_back(begin);
        events.push_back(end);
        break;
      }
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace v41sim
