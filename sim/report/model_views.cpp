#include "sim/report/model_views.h"

#include <fmt/format.h>

#include <algorithm>

namespace v41sim {
namespace {

std::string derived_from(const ModelAnalysis& m, const char* what) {
  return fmt::format("derived: {} from {}", what, m.spec.file);
}

// Layers with identical mode and storage collapse into one row ("2, 8, 14").
struct LayerGroup {
  std::vector<int64_t> layers;
  const LayerKv* kv;
};

std::vector<LayerGroup> group_layers(const KvLayout& kv) {
  std::vector<LayerGroup> groups;
  for (const LayerKv& layer : kv.layers) {
    const auto key = [](const LayerKv& l) {
      return fmt::format("{}|{}|{}|{}", l.mode, l.stores, l.global_bytes_per_token, l.window_bytes);
    };
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const LayerGroup& g) { return key(*g.kv) == key(layer); });
    if (it == groups.end()) {
      groups.push_back({{layer.layer}, &layer});
    } else {
      it->layers.push_back(layer.layer);
    }
  }
  return groups;
}

}  // namespace

std::vector<Table> kv_tables(const ModelAnalysis& m, int64_t context_tokens) {
  Table layers(fmt::format("{}: KV cache per layer", m.spec.name),
               {"layers", "mode", "stores", "global B/token (each)"});
  for (const LayerGroup& g : group_layers(m.kv)) {
    layers.add_row(
        {format_ranges(g.layers), g.kv->mode, g.kv->stores, format_fixed(g.kv->global_bytes_per_token, 4)});
  }
  layers.add_note(derived_from(m, "entry sizes from element formats and scale groups"));

  Table totals(fmt::format("{}: KV totals", m.spec.name), {"quantity", "value"});
  totals.add_row({"global (persistent) bytes per token", format_fixed(m.kv.global_bytes_per_token, 4)});
  totals.add_row({"per-request window state", format_bytes(static_cast<double>(m.kv.window_state_bytes))});
  totals.add_row(
      {"per-request compressor state", format_bytes(static_cast<double>(m.kv.compressor_state_bytes))});
  totals.add_row({fmt::format("global KV at {} tokens", context_tokens),
                  format_bytes(m.kv.global_bytes_per_token * static_cast<double>(context_tokens))});
  totals.add_row({fmt::format("one session at {} tokens", context_tokens),
                  format_bytes(m.kv.session_bytes(context_tokens))});
  totals.add_note(derived_from(m, "all figures"));
  for (const std::string& format : other_index_key_formats(m.spec)) {
    totals.add_note(fmt::format(
        "with the index keys stored as {}: {} B/token; --set {}:attention.indexer.key_cache={} selects it",
        index_key_format_text(m.spec, format, true),
        format_fixed(analyze_with_index_keys(m.spec, format).kv.global_bytes_per_token, 4), m.spec.file,
        format));
  }
  if (m.kv.compressor_state_bytes > 0) {
    totals.add_note("compressor state model: " + m.kv.compressor_state_source);
  }
  return {layers, totals};
}

namespace {

// The other index-key formats the model file defines, each with the model's
// global KV per token were the keys stored so.
nlohmann::json other_index_keys_json(const ModelAnalysis& m) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& format : other_index_key_formats(m.spec)) {
    out.push_back(
        {{"format", format},
         {"bytes_per_key", m.spec.cache(format).bytes},
         {"global_bytes_per_token", analyze_with_index_keys(m.spec, format).kv.global_bytes_per_token},
         {"source", m.spec.cache(format).source}});
  }
  return out;
}

}  // namespace

std::string index_key_format_text(const ModelSpec& spec, const std::string& format, bool with_source) {
  const CacheEntryFormat& key = spec.cache(format);
  return fmt::format("{} ({} B a key, where the model's are {} B{})", format, key.bytes,
                     spec.cache(spec.attention.indexer->key_cache).bytes,
                     with_source && !key.source.empty() ? "; " + key.source : "");
}

nlohmann::json kv_json(const ModelAnalysis& m, int64_t context_tokens) {
  nlohmann::json layers = nlohmann::json::array();
  for (std::size_t i = 0; i < m.kv.layers.size(); ++i) {
    const LayerKv& l = m.kv.layers[i];
    const LayerPlanEntry& p = m.plan[i];
    nlohmann::json row{{"layer", l.layer},
                       {"mode", l.mode},
                       {"role", std::string(role_key(p.role))},
                       {"compress_ratio", p.ratio},
                       {"stores", l.stores},
                       {"global_bytes_per_token", l.global_bytes_per_token},
                       {"window_bytes", l.window_bytes},
                       {"compressor_state_bytes", l.compressor_state_bytes}};
    row["kv_source_layer"] = p.kv_source ? nlohmann::json(*p.kv_source) : nlohmann::json();
    row["index_key_source_layer"] =
        p.index_key_source ? nlohmann::json(*p.index_key_source) : nlohmann::json();
    row["topk_source_layer"] = p.topk_source ? nlohmann::json(*p.topk_source) : nlohmann::json();
    layers.push_back(row);
  }
  const double global_bytes = m.kv.global_bytes_per_token * static_cast<double>(context_tokens);
  return {
      {"model", m.spec.name},
      {"context_tokens", context_tokens},
      {"global_bytes_per_token", m.kv.global_bytes_per_token},
      {"per_request_state_bytes", m.kv.per_request_state_bytes()},
      {"window_state_bytes", m.kv.window_state_bytes},
      {"compressor_state_bytes", m.kv.compressor_state_bytes},
      {"global_bytes_at_context", global_bytes},
      {"global_gib_at_context", global_bytes / (1024.0 * 1024.0 * 1024.0)},
      {"session_bytes_at_context", m.kv.session_bytes(context_tokens)},
      {"layers", layers},
      {"other_index_key_formats", other_index_keys_json(m)},
      {"provenance",
       {{"all", derived_from(m, "KV layout")}, {"compressor_state_bytes", m.kv.compressor_state_source}}}};
}

std::vector<Table> params_tables(const ModelAnalysis& m) {
  Table counts(fmt::format("{}: parameters", m.spec.name), {"quantity", "derived", "published"});
  auto published = [&m](const char* key) {
    const auto it = m.spec.published.find(key);
    return it == m.spec.published.end() ? std::string("-") : format_count(it->second);
  };
  counts.add_row({"total (GPU backbone)", format_count(static_cast<double>(m.params.backbone_total())),
                  published("total_params")});
  counts.add_row({"active per prefill token", format_count(m.active.prefill_per_token),
                  published("active_params_prefill")});
  counts.add_row({"active per decode token", format_count(m.active.decode_per_token),
                  published("active_params_decode")});
  if (m.active.prefill_tail_tokens > 0) {
    counts.add_row(
        {fmt::format("prefill decoder tail (last {} tokens, per token)", m.active.prefill_tail_tokens),
         format_count(static_cast<double>(m.active.prefill_tail_params_per_token)), "-"});
  }
  if (m.params.draft_stages > 0) {
    counts.add_row({fmt::format("{} draft ({} stages; widths assumed, not in the published total)",
                                m.spec.draft->kind, m.params.draft_stages),
                    format_count(static_cast<double>(m.params.draft_total())), "-"});
  }
  if (m.params.engram > 0) {
    counts.add_row(
        {"host-resident (Engram tables)", format_count(static_cast<double>(m.params.engram)), "-"});
  }
  counts.add_note(derived_from(m, "matrix shapes; norms and biases omitted"));
  counts.add_note(
      "active counts exclude the input embedding (one row per token); prefill excludes "
      "the output head (one logit row per request)");
  if (!m.spec.published.empty()) counts.add_note("published: model card / paper, for comparison only");

  Table bytes(fmt::format("{}: weight bytes", m.spec.name), {"group", "format", "bytes"});
  bytes.add_row(
      {"routed experts", m.spec.weights.routed_experts.describe(), format_bytes(m.weights.routed_experts)});
  bytes.add_row(
      {dense_weights_label(m.spec, false), m.spec.weights.dense.describe(), format_bytes(m.weights.dense)});
  if (m.spec.mhc) {
    bytes.add_row({"mHC mixing projections", m.spec.mhc->projection.describe(), format_bytes(m.weights.mhc)});
  }
  bytes.add_row({"embedding + head", m.spec.weights.embedding.describe(), format_bytes(m.weights.embedding)});
  if (m.spec.draft) {
    bytes.add_row({fmt::format("{} draft: routed experts", m.spec.draft->kind),
                   m.spec.weights.routed_experts.describe(), format_bytes(m.weights.draft_experts)});
    bytes.add_row({fmt::format("{} draft: attention, routers, mHC", m.spec.draft->kind),
                   m.spec.weights.dense.describe(), format_bytes(m.weights.draft_other)});
  }
  bytes.add_row({"GPU-resident total", "", format_bytes(m.weights.gpu_total())});
  bytes.add_row({"host-resident total", m.spec.engram ? m.spec.cache(m.spec.engram->row_cache).name : "-",
                 format_bytes(m.weights.host)});
  bytes.add_note("formats: " + m.spec.weights.source);
  return {counts, bytes};
}

nlohmann::json params_json(const ModelAnalysis& m) {
  nlohmann::json published = nlohmann::json::object();
  for (const auto& [key, value] : m.spec.published) published[key] = value;
  return {{"model", m.spec.name},
          {"total_params", m.params.backbone_total()},
          {"active_params_prefill", m.active.prefill_per_token},
          {"active_params_decode", m.active.decode_per_token},
          {"prefill_tail_tokens", m.active.prefill_tail_tokens},
          {"prefill_tail_params_per_token", m.active.prefill_tail_params_per_token},
          {"host_params", m.params.engram},
          {"weight_bytes",
           {{"routed_experts", m.weights.routed_experts},
            {"dense", m.weights.dense},
            {"mhc", m.weights.mhc},
            {"draft_experts", m.weights.draft_experts},
            {"draft_other", m.weights.draft_other},
            {"embedding", m.weights.embedding}}},
          {"weight_formats",
           {{"routed_experts", m.spec.weights.routed_experts.describe()},
            {"dense", m.spec.weights.dense.describe()},
            {"embedding", m.spec.weights.embedding.describe()}}},
          {"gpu_weight_bytes", m.weights.gpu_total()},
          {"host_weight_bytes", m.weights.host},
          {"published", published},
          {"provenance", {{"counts", derived_from(m, "matrix shapes")}, {"formats", m.spec.weights.source}}}};
}

}  // namespace v41sim
