#include "sim/report/requests_csv.h"

#include <fmt/format.h>

#include <cmath>

namespace v41sim {
namespace {

std::string ms(double value) { return std::isnan(value) ? std::string() : fmt::format("{:.3f}", value); }

// -1 (never got there) as an empty cell.
std::string index(int value) { return value < 0 ? std::string() : std::to_string(value); }

}  // namespace

std::string requests_csv(const std::vector<RequestRecord>& requests) {
  std::string out =
      "request,session,class,turn,arrival_s,held_ms,prefix_tokens,new_tokens,cached_tokens,replay_tokens,"
      "output_tokens,generated,status,prefill_instance,prefill_rank,context_parallel,decode_instance,"
      "decode_rank,ssd_read_ms,prefill_wait_ms,ttft_ms,transfer_ms,decode_wait_ms,tpot_ms,max_itl_ms,e2e_ms,"
      "within_sla,"
      "measured\n";
  for (const RequestRecord& r : requests) {
    out += fmt::format(
        "{},{},\"{}\",{},{:.6f},{:.3f},{},{},{},{},{},{},\"{}\",{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}"
        "\n",
        r.id, r.session, r.traffic_class, r.turn, r.arrival_s, r.held_ms, r.prefix_tokens, r.new_tokens,
        r.cached_tokens, r.replay_tokens, r.output_tokens, r.generated, r.status, index(r.prefill_instance),
        index(r.prefill_rank), r.context_parallel ? 1 : 0, index(r.decode_instance), index(r.decode_rank),
        ms(r.ssd_read_ms), ms(r.prefill_wait_ms), ms(r.ttft_ms), ms(r.transfer_ms), ms(r.decode_wait_ms),
        ms(r.tpot_ms), ms(r.max_itl_ms), ms(r.e2e_ms), r.within_sla ? 1 : 0, r.measured ? 1 : 0);
  }
  return out;
}

}  // namespace v41sim
