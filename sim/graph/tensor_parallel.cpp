#include "sim/graph/tensor_parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/common/input_error.h"
#include "sim/graph/kernel_factory.h"

namespace v41sim {
namespace {

// The fewest heads FlashMLA's sparse attention kernels take (64 or 128): vLLM's
// DeepSeek-V4 attention pads a tensor-parallel GPU's heads up to them.
constexpr double kSparseAttentionHeadTile = 64;

Kernel link_transfer(std::string name, double tokens, int64_t width, int64_t tp, double link_bytes) {
  Kernel k;
  k.name = std::move(name);
  k.kernel_class = KernelClass::kAllToAll;
  k.stream = Stream::kCommunication;
  k.math = MathType::kBf16;
  k.shape = {std::max<int64_t>(1, static_cast<int64_t>(std::ceil(tokens))), width, 1, tp};
  k.link_bytes = link_bytes;
  k.hbm_bytes = 2.0 * link_bytes;  // read on send, written on receive
  return k;
}

// A ring pass moves (tp - 1) / tp of the message through each GPU; an
// all-reduce is two passes (a reduce-scatter, then an all-gather).
Kernel ring_collective(std::string name, double tokens, int64_t hidden, int64_t tp, double passes) {
  const double message = tokens * static_cast<double>(hidden) * kBf16ActivationBytes;
  const double ways = static_cast<double>(tp);
  return link_transfer(std::move(name), tokens, hidden, tp, message * passes * (ways - 1.0) / ways);
}

}  // namespace

double local_attention_heads(const ModelSpec& m, const StepShape& s) {
  return static_cast<double>(m.attention.num_heads) / static_cast<double>(s.attention_tp);
}

double attention_kernel_heads(const ModelSpec& m, const StepShape& s) {
  const double heads = static_cast<double>(m.attention.num_heads);
  return std::max(local_attention_heads(m, s), std::min(heads, kSparseAttentionHeadTile));
}

Kernel make_all_reduce(std::string name, double tokens, int64_t hidden, int64_t tp) {
  return ring_collective(std::move(name), tokens, hidden, tp, 2.0);
}

Kernel make_reduce_scatter(std::string name, double tokens, int64_t hidden, int64_t tp) {
  return ring_collective(std::move(name), tokens, hidden, tp, 1.0);
}

Kernel make_all_gather(std::string name, double tokens, int64_t hidden, int64_t tp) {
  return ring_collective(std::move(name), tokens, hidden, tp, 1.0);
}

Kernel make_logits_gather(std::string name, double tokens, int64_t vocab, int64_t tp) {
  // The GPU that samples receives every other GPU's share.
  const double logits = tokens * static_cast<double>(vocab) * kBf16ActivationBytes;
  const double ways = static_cast<double>(tp);
  return link_transfer(std::move(name), tokens, vocab, tp, logits * (ways - 1.0) / ways);
}

void require_attention_tp_fits(const ModelSpec& m, int64_t tp, int64_t ep, int64_t ep_per_node,
                               const InputLocation& at) {
  if (tp < 1) throw InputError(at, fmt::format("expected at least 1 GPU an attention rank, got {}", tp));
  if (tp == 1) return;
  const AttentionSpec& a = m.attention;
  if (a.kv_projection == KvProjection::kSeparateKv) {
    throw InputError(at, fmt::format("expected 1: tensor-parallel attention is modelled for a latent "
                                     "KV every GPU holds whole (MLA, V4's shared latent), and {} keeps "
                                     "{} KV heads",
                                     m.name, a.kv_heads));
  }
  if (a.num_heads % tp != 0 || (a.output_groups > 0 && a.output_groups % tp != 0)) {
    throw InputError(
        at,
        fmt::format(
            "expected a GPU count that divides {}'s {} query heads{}, got {}", m.name, a.num_heads,
            a.output_groups > 0 ? fmt::format(" and {} output groups", a.output_groups) : std::string(), tp));
  }
  if (tp > ep_per_node) {
    throw InputError(
        at,
        fmt::format("expected at most {} GPUs (one NVLink domain, where the rank's all-reduces run), got {}",
                    ep_per_node, tp));
  }
  if (m.moe && ep % tp != 0) {
    throw InputError(at, fmt::format("expected a GPU count that divides the EP group ({}): a "
                                     "tensor-parallel rank's GPUs are among the group's, got {}",
                                     ep, tp));
  }
}

void require_column_split_fits(const ModelSpec& m, int64_t tp, int64_t ep, int64_t redundant_experts,
                               const InputLocation& at) {
  if (!m.moe) throw InputError(at, fmt::format("{} has no routed experts to split", m.name));
  if (tp < 2) {
    throw InputError(at,
                     "the routed experts split by columns over a tensor-parallel attention rank's GPUs: "
                     "expected attention_tp of 2 or more");
  }
  if (ep != tp) {
    throw InputError(at, fmt::format("expected the rank to be its own EP group (attention_tp {} against EP "
                                     "{}): a slice of every expert on every GPU of the group",
                                     tp, ep));
  }
  if (redundant_experts > 0) {
    throw InputError(at, fmt::format("expected no redundant experts (got {}): split by columns, every GPU "
                                     "holds a slice of every expert, and no replica evens a load",
                                     redundant_experts));
  }
  if (m.moe->expert_intermediate % tp != 0) {
    throw InputError(
        at, fmt::format("expected a GPU count that divides the experts' {} intermediate columns, got {}",
                        m.moe->expert_intermediate, tp));
  }
}

}  // namespace v41sim
