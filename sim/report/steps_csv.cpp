#include "sim/report/steps_csv.h"

#include <fmt/format.h>

namespace v41sim {

std::string steps_csv(const std::vector<StepRecord>& steps) {
  std::string out =
      "start_s,pool,instance,kind,sequences,decode_context,drafts,"
      "prompts,prompt_tokens,prompt_context,step_ms,communication_ms,micro_batches\n";
  for (const StepRecord& s : steps) {
    out += fmt::format("{:.6f},{},{},{},{},{:.1f},{:.3f},{},{},{:.1f},{:.3f},{:.3f},{}\n", s.start_s,
                       s.prefill_pool ? "prefill" : "decode", s.instance, step_kind_name(s.kind), s.sequences,
                       s.decode_context, s.drafts, s.prompts, s.prompt_tokens, s.prompt_context, s.step_ms,
                       s.communication_ms, s.micro_batches);
  }
  return out;
}

}  // namespace v41sim
