// SlaSpec: the latency limits a request is held to. A deployment gives one
// for all its traffic; a class of a mix of traffic may give its own (a chat
// wants its first token soon, a coding agent can wait for it but not for
// each next one), which then replaces the deployment's where it gives a field.
#pragma once

namespace v41sim {

struct SlaSpec {
  double ttft_ms = 0;  // 0 in a class's own limits: the deployment's
  double tpot_ms = 0;

  // A finished request is within the limits when both its times are.
  bool admits(double ttft_ms_taken, double tpot_ms_taken) const {
    return ttft_ms_taken <= ttft_ms && tpot_ms_taken <= tpot_ms;
  }
  bool gives_any() const { return ttft_ms > 0 || tpot_ms > 0; }
};

// The limits a class is held to: its own fields where it gives them, the deployment's for the rest.
inline SlaSpec held_to(const SlaSpec& deployment, const SlaSpec& own) {
  return {own.ttft_ms > 0 ? own.ttft_ms : deployment.ttft_ms,
          own.tpot_ms > 0 ? own.tpot_ms : deployment.tpot_ms};
}

}  // namespace v41sim
