#include "sim/report/steps_csv.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

namespace v41sim {

void write_steps_csv(std::ostream& out, const std::vector<StepRecord>& steps) {
  out << "start_s,pool,instance,kind,sequences,decode_context,drafts,"
         "prompts,prompt_tokens,prompt_context,step_ms,communication_ms,micro_batches\n";
  fmt::memory_buffer row;
  for (const StepRecord& s : steps) {
    row.clear();
    fmt::format_to(std::back_inserter(row),
                   "{:.6f},{},{},{},{},{:.1f},{:.3f},{},{},{:.1f},{:.3f},{:.3f},{}\n", s.start_s,
                   s.prefill_pool ? "prefill" : "decode", s.instance, step_kind_name(s.kind), s.sequences,
                   s.decode_context, s.drafts, s.prompts, s.prompt_tokens, s.prompt_context, s.step_ms,
                   s.communication_ms, s.micro_batches);
    out.write(row.data(), static_cast<std::streamsize>(row.size()));
  }
}

}  // namespace v41sim
