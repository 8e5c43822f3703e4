// SlaSpec: the latency limits a request is held to. A deployment gives one
// for all its traffic; a class of a mix of traffic may give its own (a chat
// wants its first token soon, a coding agent can wait for it but not for
// each next one), which then replaces the deployment's where it gives a field.
//
// TTFT and TPOT are each request's own (TPOT its mean gap between tokens).
// A mean hides a stall: a 2 s prompt step on the GPU decoding it freezes a
// streamed answer that still keeps a 30 ms TPOT over 2,000 tokens. So a limit
// may also bound a request's longest gap between streamed chunks (its worst
// inter-token latency, ITL); none unless the deployment or class asks.
#pragma once

namespace v41sim {

struct SlaSpec {
  double ttft_ms = 0;  // 0 in a class's own limits: the deployment's
  double tpot_ms = 0;
  // The longest gap between streamed chunks; 0: no limit (in a class: the deployment's).
  double itl_ms = 0;

  // Which limits a finished request's times pass over.
  struct Missed {
    bool ttft = false;
    bool tpot = false;
    bool itl = false;
    bool any() const { return ttft || tpot || itl; }
  };
  Missed missed(double ttft_ms_taken, double tpot_ms_taken, double longest_itl_ms_taken) const {
    return {ttft_ms_taken > ttft_ms, tpot_ms_taken > tpot_ms, limits_itl() && longest_itl_ms_taken > itl_ms};
  }
  bool limits_itl() const { return itl_ms > 0; }
  bool gives_any() const { return ttft_ms > 0 || tpot_ms > 0 || itl_ms > 0; }
};

// The limits a class is held to: its own fields where it gives them, the deployment's for the rest.
inline SlaSpec held_to(const SlaSpec& deployment, const SlaSpec& own) {
  return {own.ttft_ms > 0 ? own.ttft_ms : deployment.ttft_ms,
          own.tpot_ms > 0 ? own.tpot_ms : deployment.tpot_ms,
          own.itl_ms > 0 ? own.itl_ms : deployment.itl_ms};
}

}  // namespace v41sim
