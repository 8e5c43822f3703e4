#include "sim/graph/ffn_block.h"

#include <algorithm>
#include <cmath>

#include "sim/graph/expert_load.h"
#include "sim/graph/residual_mixing.h"
#include "sim/graph/tensor_parallel.h"

namespace v41sim {
namespace {

// Gate and up projections are one GEMM of twice the width.
constexpr double kGateUp = 2.0;

// The busiest rank (the one that sets the step) receives `load_imbalance` times the mean.
// Decode alone moves its few tokens with the low-latency kernels; prefill, a
// decode step that carries prompt chunks and one beside another rank's prompt
// step, with the normal (high-throughput) ones, as SGLang's DeepEP "auto" mode
// picks them (normal once any rank of the group has prompt tokens).
Kernel& add_all_to_all(const LayerContext& c, KernelFactory& f, const char* name, double bytes_per_value,
                       double load_imbalance) {
  return f.push(
      make_all_to_all(name, {c.tokens, c.top_k, c.model.spec.hidden_size, bytes_per_value, c.step.ep,
                             c.step.ep_per_node, load_imbalance, c.step.decode_only(), c.routed_experts}));
}

void add_moe(const LayerContext& c, KernelFactory& f) {
  const ModelSpec& m = c.model.spec;
  const double h = static_cast<double>(m.hidden_size);
  const double experts = static_cast<double>(c.routed_experts);
  const double top_k = static_cast<double>(c.top_k);
  const double inter = static_cast<double>(c.ffn_intermediate);
  f.gemm("router", c.tokens, experts, h, m.weights.dense, MathType::kBf16);
  f.elementwise("routing_topk", c.tokens, experts, c.tokens * experts * kFp32Bytes, c.tokens * experts * 4.0);
  // Even routing gives each rank tokens x top_k rows; the busiest rank, which
  // sets the step, gets the placement's imbalance more, and what one step's
  // routing adds by chance. A rank holds its share of the expert slots
  // (redundant replicas included; the placement evens their load, so each
  // slot is taken as equally likely to be reached) and reads the weights of
  // those its tokens reach. A tensor-parallel rank's GPUs all hold its
  // tokens and split its experts (tensor_parallel.h): no all-to-all.
  // Split by columns, each GPU holds a slice of every expert: as one rank of
  // the whole group, it runs every routed row on slices 1/attention_tp wide.
  const bool by_columns = c.step.experts_split_by_columns;
  const int64_t holders = by_columns ? 1 : c.step.ep;  // ranks the experts are dealt over
  const double split_ways = by_columns ? static_cast<double>(c.step.attention_tp) : 1.0;
  const double slots = experts + static_cast<double>(c.redundant_experts);
  const double expert_tokens = c.tokens * c.step.expert_token_share;  // an attention rank's mean (StepShape)
  const double ep = static_cast<double>(c.step.ep);
  // GPUs sending the group distinct tokens: each GPU its slice where ranks
  // scatter their tokens to the experts, else each rank once.
  const bool scattered = scatters_tokens_to_experts(c.step);
  const double senders = scattered ? ep : ep / static_cast<double>(c.step.attention_tp);
  const double group_tokens = expert_tokens * senders;
  const BusiestRank busiest = c.step.routed_by_chance ? busiest_rank(group_tokens, top_k, slots, holders)
                                                      : average_rank(group_tokens, top_k, slots, holders);
  const double imbalance = (by_columns ? 1.0 : c.step.ep_load_imbalance) * busiest.rows_over_mean;
  const double rows = group_tokens * top_k / static_cast<double>(holders) * imbalance;
  const double touched = busiest.experts_reached;
  const double slice = inter / split_ways;  // of each expert's intermediate columns, this GPU's
  const bool spans_ranks = c.step.ep > c.step.attention_tp;
  // Tokens travel as the expert GEMMs take them (FP8 before FP8 math, BF16
  // before the BF16 math of W4A16 kernels).
  const MathType expert_math =
      c.step.engine.experts_bf16_math ? MathType::kBf16 : gemm_math_for(m.weights.routed_experts);
  const double expert_row_bytes = gemm_row_operand_bytes(expert_math);
  if (spans_ranks) add_all_to_all(c, f, "ep_dispatch", expert_row_bytes, imbalance);
  // W4A16 runs as Marlin's weight-only kernels: their own tiles, the weights
  // widened in every one (Tiling::Rule::kWeightOnly).
  const auto expert_gemm = [&](const char* name, double n, double k) {
    Kernel& gemm = f.grouped_gemm(name, rows, touched, n, k, m.weights.routed_experts, expert_math);
    if (c.step.engine.experts_bf16_math) gemm.tiling.rule = Tiling::Rule::kWeightOnly;
  };
  expert_gemm("experts_gate_up", kGateUp * slice, h);
  f.elementwise("experts_swiglu_quant", rows, slice,
                rows * slice * (kGateUp * kBf16ActivationBytes + expert_row_bytes));
  expert_gemm("experts_down", h, slice);
  if (c.shared_experts > 0) {
    // By columns over a rank that is its own EP group; whole on a slice of the tokens where scattered.
    const double width = inter * static_cast<double>(c.shared_experts) /
                         (scattered ? 1.0 : static_cast<double>(c.step.attention_tp));
    const double dense_row_bytes = gemm_row_bytes_for(m.weights.dense);
    f.gemm_for_weights("shared_gate_up", c.tokens, kGateUp * width, h, m.weights.dense);
    f.elementwise("shared_swiglu_quant", c.tokens, width,
                  c.tokens * width * (kGateUp * kBf16ActivationBytes + dense_row_bytes));
    f.gemm_for_weights("shared_down", c.tokens, h, width, m.weights.dense);
  }
  if (spans_ranks) add_all_to_all(c, f, "ep_combine", kBf16ActivationBytes, imbalance);
  if (c.step.attention_tp > 1 && !scattered)
    f.push(make_all_reduce("ffn_tp_all_reduce", c.tokens, m.hidden_size, c.step.attention_tp));
}

void add_dense_mlp(const LayerContext& c, KernelFactory& f) {
  const ModelSpec& m = c.model.spec;
  const double h = static_cast<double>(m.hidden_size);
  // By columns over a rank that is its own EP group; whole on a slice of the tokens where scattered.
  const bool scattered = scatters_tokens_to_experts(c.step);
  const double inter =
      static_cast<double>(c.ffn_intermediate) / (scattered ? 1.0 : static_cast<double>(c.step.attention_tp));
  f.gemm_for_weights("mlp_gate_up", c.tokens, kGateUp * inter, h, m.weights.dense);
  f.elementwise("mlp_swiglu_quant", c.tokens, inter,
                c.tokens * inter * (kGateUp * kBf16ActivationBytes + gemm_row_bytes_for(m.weights.dense)));
  f.gemm_for_weights("mlp_down", c.tokens, h, inter, m.weights.dense);
  if (c.step.attention_tp > 1 && !scattered)
    f.push(make_all_reduce("mlp_tp_all_reduce", c.tokens, m.hidden_size, c.step.attention_tp));
}

}  // namespace

double expected_remote_nodes(int64_t nodes, int64_t experts, int64_t top_k) {
  if (nodes <= 1) return 0.0;
  // P(a node holds none of the token's experts), drawn without replacement
  // (a node's share of the experts need not be whole: the nodes average it).
  const double elsewhere = static_cast<double>(experts) * (1.0 - 1.0 / static_cast<double>(nodes));
  double none = 1.0;
  for (int64_t i = 0; i < top_k; ++i)
    none *= std::max(0.0, elsewhere - static_cast<double>(i)) / static_cast<double>(experts - i);
  return static_cast<double>(nodes - 1) * (1.0 - none);
}

Kernel make_all_to_all(std::string name, const AllToAllShape& s) {
  const double ep = static_cast<double>(s.ep);
  const double per_node = static_cast<double>(std::min(s.ep, s.ep_per_node));
  Kernel k;
  k.name = std::move(name);
  k.kernel_class = KernelClass::kAllToAll;
  k.stream = Stream::kCommunication;
  k.math = MathType::kBf16;
  k.shape = {static_cast<int64_t>(std::ceil(s.tokens)), s.hidden, s.top_k, s.ep};
  // Each routed copy of a token leaves this rank unless its expert is local;
  // the busiest rank (the one that sets the step) receives the most.
  const double token_bytes = s.tokens * static_cast<double>(s.hidden) * s.bytes_per_value * s.load_imbalance;
  const double copies = token_bytes * static_cast<double>(s.top_k) * (ep - 1.0) / ep;
  const double off_share = ep > per_node ? (ep - per_node) / (ep - 1.0) : 0.0;
  double on = copies * (1.0 - off_share);
  double off = copies * off_share;
  const int64_t nodes = static_cast<int64_t>(std::ceil(ep / per_node));
  if (!s.low_latency && off > 0 && s.experts >= s.top_k) {
    // The normal kernels (DeepEP's) send a token once to each node that holds
    // one of its experts, and that node's receiving GPU forwards the copies
    // over NVLink; the low-latency kernels send every copy on its own.
    on += off * (per_node - 1.0) / per_node;
    off = token_bytes * expected_remote_nodes(nodes, s.experts, s.top_k);
  }
  k.link_bytes = on + off;
  k.off_node_fraction = k.link_bytes > 0 ? off / k.link_bytes : 0.0;
  k.hbm_bytes = 2.0 * k.link_bytes;  // read on send, write on receive
  k.low_latency = s.low_latency;
  return k;
}

void add_ffn_block(const LayerContext& c, KernelFactory& f) {
  // Where tensor-parallel ranks scatter their tokens to the experts, each GPU
  // runs the block on its slice, and the slices are gathered after it.
  const bool scattered = scatters_tokens_to_experts(c.step);
  LayerContext slice = c;
  if (scattered) slice.tokens = c.tokens / static_cast<double>(c.step.attention_tp);
  add_residual_mixing(slice, f, "ffn");
  if (c.moe) {
    add_moe(slice, f);
  } else {
    add_dense_mlp(slice, f);
  }
  if (scattered)
    f.push(make_all_gather("ffn_tp_all_gather", c.tokens, c.model.spec.hidden_size, c.step.attention_tp));
}

// Engram: each token looks up one row per hash head and n-gram order (2..max)
// in host memory; the rows cross the host link, then merge into the stream.
void add_engram_lookup(const LayerContext& c, KernelFactory& f) {
  const ModelSpec& m = c.model.spec;
  const EngramSpec& e = *m.engram;
  const double rows = c.tokens * static_cast<double>(e.heads * (e.max_ngram - 1));
  const double row_bytes = static_cast<double>(m.cache(e.row_cache).bytes);
  Kernel& copy = f.push({});
  copy.name = "engram_host_gather";
  copy.kernel_class = KernelClass::kHostCopy;
  copy.stream = Stream::kHostCopy;
  copy.shape = {static_cast<int64_t>(std::ceil(rows)), static_cast<int64_t>(row_bytes), 1, 1};
  copy.link_bytes = rows * row_bytes;
  copy.hbm_bytes = rows * row_bytes;
  const double h = static_cast<double>(m.hidden_size);
  f.elementwise("engram_merge", c.tokens, h, rows * row_bytes + c.tokens * h * 2.0 * kBf16ActivationBytes,
                rows * static_cast<double>(e.row_dim) * 2.0);
}

}  // namespace v41sim
