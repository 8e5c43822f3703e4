#include "sim/model/kv_layout.h"

#include <fmt/format.h>

#include <algorithm>

namespace v41sim {
namespace {

// Running state of a pooling compressor producing `dim`-wide entries: the
// partial sums of `overlap` windows of `ratio` tokens, in `buffers` buffers.
int64_t compressor_state(const ModelSpec& model, int64_t ratio, int64_t dim) {
  const CompressorSpec& c = model.attention.compressor;
  if (!c.state_format || ratio <= 1) return 0;
  return c.state_buffers * c.state_format->bytes_for(ratio * c.overlap(ratio) * dim);
}

LayerKv layer_kv(const ModelSpec& model, const LayerPlanEntry& e) {
  const AttentionSpec& a = model.attention;
  LayerKv kv;
  kv.layer = e.layer;
  kv.mode = e.mode;
  std::vector<std::string> parts;
  if (e.owns_kv()) {
    const int64_t main = model.cache(a.main_cache).bytes;
    kv.global_bytes_per_token += static_cast<double>(main) / static_cast<double>(e.ratio);
    parts.push_back(fmt::format("main KV {} B/{}", main, e.ratio));
    kv.compressor_state_bytes += compressor_state(model, e.ratio, a.kv_heads * a.head_dim);
  }
  if (e.owns_index_keys()) {
    const int64_t key = model.cache(a.indexer->key_cache).bytes;
    kv.global_bytes_per_token += static_cast<double>(key) / static_cast<double>(e.ratio);
    parts.push_back(fmt::format("index key {} B/{}", key, e.ratio));
    kv.compressor_state_bytes += compressor_state(model, e.ratio, a.indexer->head_dim);
  }
  if (!e.owns_kv() && e.kv_source) parts.push_back(fmt::format("reads layer {}", *e.kv_source));
  if (e.has_window) {
    const int64_t entry = model.cache(a.window_cache).bytes;
    kv.window_bytes = a.sliding_window * entry;
    parts.push_back(fmt::format("window {} x {} B", a.sliding_window, entry));
  }
  for (const std::string& p : parts) kv.stores += (kv.stores.empty() ? "" : "; ") + p;
  return kv;
}

}  // namespace

double KvLayout::session_bytes(int64_t tokens) const {
  const int64_t window = std::min(tokens, window_tokens);
  return global_bytes_per_token * static_cast<double>(tokens) +
         static_cast<double>(window * window_entry_bytes_all_layers + compressor_state_bytes);
}

KvLayout compute_kv_layout(const ModelSpec& model, const LayerPlan& plan) {
  KvLayout layout;
  layout.window_tokens = model.attention.sliding_window;
  layout.compressor_state_source = model.attention.compressor.state_source;
  for (const LayerPlanEntry& e : plan) {
    LayerKv kv = layer_kv(model, e);
    layout.global_bytes_per_token += kv.global_bytes_per_token;
    layout.window_state_bytes += kv.window_bytes;
    layout.compressor_state_bytes += kv.compressor_state_bytes;
    if (e.has_window) layout.window_entry_bytes_all_layers += model.cache(model.attention.window_cache).bytes;
    layout.layers.push_back(std::move(kv));
  }
  return layout;
}

}  // namespace v41sim
