#include "sim/report/fit_view.h"

#include <fmt/format.h>

namespace v41sim {
namespace {

std::string title(const ModelAnalysis& m, const GpuProfile& gpu, const FitRequest& r) {
  const std::string replicas = r.redundant_experts > 0
                                   ? fmt::format(" with {} redundant experts", r.redundant_experts)
                                   : std::string();
  const std::string ep = m.spec.moe ? fmt::format(", EP {}{}", r.ep, replicas) : std::string();
  const std::string tp =
      r.attention_tp > 1 ? fmt::format(", attention TP {}", r.attention_tp) : std::string();
  return fmt::format("{} on {} x {}{}{}, {} tokens per session", m.spec.name, r.gpus, gpu.name, ep, tp,
                     r.context_tokens);
}

std::string weights_label(const FitRequest& r) {
  const std::string split =
      r.attention_tp > 1
          ? fmt::format(
                " (the per-head projections, output projection, shared experts and dense MLPs split "
                "over each attention rank's {} GPUs, the embedding and head by vocabulary)",
                r.attention_tp)
          : std::string();
  return fmt::format("derived: experts {}, dense {}, embedding {}, dense weights {}{}",
                     r.weights.routed_experts.describe(), r.weights.dense.describe(),
                     r.weights.embedding.describe(), placement_name(r.dense_placement), split);
}

}  // namespace

Table fit_table(const ModelAnalysis& m, const GpuProfile& gpu, const FitRequest& r, const FitResult& f) {
  Table t(title(m, gpu, r), {"per GPU", "bytes", "source"});
  t.add_row({"HBM", format_bytes(f.hbm_bytes_per_gpu), gpu.hbm_bytes.provenance().label()});
  if (m.spec.moe) {
    t.add_row({"routed experts ((routed + redundant) / EP of them)",
               format_bytes(f.routed_expert_bytes_per_gpu), "derived"});
  }
  t.add_row({dense_weights_label(m.spec, true), format_bytes(f.dense_bytes_per_gpu), "derived"});
  t.add_row({"embedding + head", format_bytes(f.embedding_bytes_per_gpu), "derived"});
  if (m.spec.draft) {
    t.add_row({fmt::format("{} draft, {} stages (experts / EP, the rest as the dense weights)",
                           m.spec.draft->kind, m.spec.draft->stages),
               format_bytes(f.draft_bytes_per_gpu), "derived (widths assumed as the model file says)"});
  }
  t.add_row({"weights total", format_bytes(f.weight_bytes_per_gpu), "derived"});
  t.add_row({"activation / workspace reserve", format_bytes(f.reserve_bytes_per_gpu),
             r.reserve_fraction.provenance().label()});
  t.add_row({"left for KV", format_bytes(f.kv_bytes_per_gpu), "derived"});
  t.add_row({"one session (global KV + window/compressor state)", format_bytes(f.session_bytes), "derived"});
  if (r.dense_placement == DensePlacement::kSharded) {
    t.add_row({"a session's KV split over",
               fmt::format("{} of the {} GPUs ({} KV head{}: each GPU holds {} of every session's)",
                           f.kv_split_ways, r.gpus, m.spec.attention.kv_heads,
                           m.spec.attention.kv_heads == 1 ? "" : "s",
                           f.kv_split_ways == 1 ? std::string("all") : fmt::format("1/{}", f.kv_split_ways)),
               "derived"});
  }
  if (r.attention_tp > 1) {
    t.add_row({"a session's KV held by",
               fmt::format("each of its attention rank's {} GPUs, whole ({} KV head)", r.attention_tp,
                           m.spec.attention.kv_heads),
               "derived"});
  }
  t.add_row({"KV capacity", fmt::format("{} tokens", f.kv_tokens_per_gpu), "derived"});
  const std::string per_rank = r.attention_tp > 1
                                   ? fmt::format("{} per attention rank of {} GPUs, ",
                                                 f.sessions * r.attention_tp / r.gpus, r.attention_tp)
                                   : std::string();
  t.add_row({"sessions", fmt::format("{}{} per GPU, {} in all", per_rank, f.sessions_per_gpu, f.sessions),
             "derived"});
  if (f.host_weight_bytes_per_node > 0) {
    const std::string dram =
        f.host_dram_bytes_per_node > 0 ? format_bytes(f.host_dram_bytes_per_node) : std::string("unknown");
    const bool over =
        f.host_dram_bytes_per_node > 0 && f.host_weight_bytes_per_node > f.host_dram_bytes_per_node;
    t.add_row({"host memory per node (Engram tables)",
               fmt::format("{} of {}{}", format_bytes(f.host_weight_bytes_per_node), dram,
                           over ? ": more than the node holds (serving runs refuse it)" : ""),
               gpu.host_dram_bytes_per_node.provenance().label()});
  }
  t.add_note(weights_label(r));
  return t;
}

nlohmann::json fit_json(const ModelAnalysis& m, const GpuProfile& gpu, const FitRequest& r,
                        const FitResult& f) {
  return {{"model", m.spec.name},
          {"gpu", gpu.name},
          {"gpus", r.gpus},
          {"ep", r.ep},
          {"redundant_experts", r.redundant_experts},
          {"attention_tp", r.attention_tp},
          {"context_tokens", r.context_tokens},
          {"dense_placement", std::string(placement_name(r.dense_placement))},
          {"hbm_bytes_per_gpu", f.hbm_bytes_per_gpu},
          {"routed_expert_bytes_per_gpu", f.routed_expert_bytes_per_gpu},
          {"dense_bytes_per_gpu", f.dense_bytes_per_gpu},
          {"embedding_bytes_per_gpu", f.embedding_bytes_per_gpu},
          {"draft_bytes_per_gpu", f.draft_bytes_per_gpu},
          {"weight_bytes_per_gpu", f.weight_bytes_per_gpu},
          {"reserve_bytes_per_gpu", f.reserve_bytes_per_gpu},
          {"kv_bytes_per_gpu", f.kv_bytes_per_gpu},
          {"session_bytes", f.session_bytes},
          {"kv_split_ways", f.kv_split_ways},
          {"kv_tokens_per_gpu", f.kv_tokens_per_gpu},
          {"sessions_per_gpu", f.sessions_per_gpu},
          {"sessions", f.sessions},
          {"host_weight_bytes_per_node", f.host_weight_bytes_per_node},
          {"host_dram_bytes_per_node", f.host_dram_bytes_per_node},
          {"provenance",
           {{"hbm_bytes_per_gpu", gpu.hbm_bytes.provenance().label()},
            {"reserve_bytes_per_gpu", r.reserve_fraction.provenance().label()},
            {"weights", weights_label(r)},
            {"host_dram_bytes_per_node", gpu.host_dram_bytes_per_node.provenance().label()},
            {"other", "derived"}}}};
}

}  // namespace v41sim
