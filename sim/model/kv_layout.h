// KvLayout: bytes of KV cache per token and per request, layer by layer.
//
// Two kinds of state, kept apart because they live in different tiers:
//  - global (persistent) KV: grows with context; the compressed main entries
//    and index keys of layers that own them, at one entry per `ratio` tokens;
//  - bounded per-request state: the sliding window (every layer with one) and
//    the compressors' running state; constant once the context passes the window.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/model/layer_plan.h"
#include "sim/model/model_spec.h"

namespace v41sim {

struct LayerKv {
  int64_t layer = 0;
  std::string mode;
  std::string stores;                  // human-readable: what the layer keeps
  double global_bytes_per_token = 0;   // main KV + index keys, amortized over the ratio
  int64_t window_bytes = 0;            // window tokens x window entry bytes
  int64_t compressor_state_bytes = 0;  // running compressor state (per request)
};

struct KvLayout {
  std::vector<LayerKv> layers;
  double global_bytes_per_token = 0;
  int64_t window_state_bytes = 0;       // per request, all layers
  int64_t compressor_state_bytes = 0;   // per request, all layers
  std::string compressor_state_source;  // provenance of the compressor-state model

  int64_t per_request_state_bytes() const { return window_state_bytes + compressor_state_bytes; }
  // Global KV for `tokens` plus the bounded state (window capped at the context).
  double session_bytes(int64_t tokens) const;
  int64_t window_tokens = 0;
  int64_t window_entry_bytes_all_layers = 0;  // bytes of one window token summed over layers
};

KvLayout compute_kv_layout(const ModelSpec& model, const LayerPlan& plan);

}  // namespace v41sim
