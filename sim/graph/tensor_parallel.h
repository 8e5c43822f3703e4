// Tensor-parallel attention (StepShape::attention_tp): an attention rank of
// several GPUs, each running all of the rank's tokens.
//
// What a GPU of the rank runs, as vLLM's DeepSeek-V4 attention splits it
// (DeepseekV4MultiHeadLatentAttentionWrapper; V3's MLA alike): the query
// up-projection and the output projection (its groups, or its input columns)
// by heads, one share a GPU; the query and KV down-projections, the
// compressors and the lightning indexer whole on every GPU ("no tensor
// parallel, just replicated"), since a latent of one KV head cannot be split;
// attention over its own heads, padded up to the sparse kernel's head tile
// (FlashMLA's sparse kernels take 64 or 128 heads: vLLM pads a GPU's 8 heads
// of V4-Flash at TP8 to 64, so attention costs a GPU what it costs one of a
// data-parallel rank); every GPU reads the whole KV; the output head by
// vocabulary, its logits gathered.
//
// Where the rank is its own EP group, the block's output is summed over the
// GPUs (an all-reduce), and so is the feed-forward's: the routed experts split
// over the rank's GPUs, each GPU taking the rows of every token that reach its
// experts (or, split by columns, every row on its slice of each expert), no
// all-to-all; the shared experts and dense MLPs by columns. Where several
// ranks share an EP group (SGLang's data-parallel attention with several GPUs
// a rank), the sum is reduce-scattered instead: each GPU runs the
// feed-forward block on its slice of the rank's tokens, sends it to the
// experts like a data-parallel rank, and the slices are all-gathered after.
#pragma once

#include <cstdint>
#include <string>

#include "sim/graph/kernel.h"
#include "sim/graph/step_shape.h"
#include "sim/model/model_spec.h"

namespace v41sim {

// What outputs say of a tensor-parallel step's layout (assumed where noted).
inline constexpr const char* kTensorParallelAssumption =
    "tensor-parallel attention: a GPU of the rank runs its share of the query heads (the query "
    "up-projection and output projection split by heads), the down-projections, compressors and indexer "
    "whole (vLLM's DeepSeek-V4 attention replicates them), attention over its heads padded to the sparse "
    "kernel's 64 (FlashMLA's sparse kernels take 64 or 128 heads; vLLM pads a GPU's heads up to them) "
    "over the whole KV; where the rank is its own EP group, the attention and feed-forward outputs summed "
    "by an all-reduce over NVLink (ring traffic, the NVLink collectives' fixed cost: assumed), the routed "
    "experts split over the rank's GPUs with no all-to-all, the shared experts by columns; the head by "
    "vocabulary with its logits gathered, and the embedding by vocabulary, its rows summed by one "
    "all-reduce a step (vLLM's VocabParallelEmbedding), the first kernel of the first layer";

// What batch and rate tables say where a deployment's decode ranks are
// tensor-parallel (their batch columns are named per GPU, as a GPU is a
// data-parallel rank).
inline constexpr const char* kTensorParallelBatches =
    "a tensor-parallel deployment's batch and sessions per GPU are its decode rank's (each of the rank's "
    "GPUs holds its sessions' KV whole), and its tokens/s per GPU the rank's over its GPUs";

// What outputs say of a rank whose routed experts split by columns.
inline constexpr const char* kExpertsByColumnsAssumption =
    "the routed experts split by columns over the rank's GPUs (SGLang's --tp without --ep): each GPU runs "
    "every routed row on its slice of each expert (its share of the intermediate columns), reading that "
    "slice of every expert reached, with no all-to-all and no busiest rank; the partial sums join the "
    "all-reduce";

// What outputs say where tensor-parallel ranks sit inside a larger EP group.
inline constexpr const char* kScatteredRanksAssumption =
    "tensor-parallel ranks inside a larger EP group (SGLang's data-parallel attention with several GPUs a "
    "rank): the attention output reduce-scattered over the rank's GPUs, each GPU running the "
    "feed-forward block (mixing, router, shared experts, EP dispatch and combine) on its slice of the "
    "rank's tokens with whole shared experts, and the slices all-gathered before the next layer, as "
    "SGLang's layer communicator scatters them (assumed from its scatter modes; no published step)";

// Whether the step's tensor-parallel ranks sit inside a larger EP group:
// the feed-forward block then runs on each GPU's slice of its rank's tokens
// (scattered after attention, gathered after the block).
inline bool ranks_share_ep_group(int64_t attention_tp, int64_t ep) {
  return attention_tp > 1 && ep > attention_tp;
}
inline bool scatters_tokens_to_experts(const StepShape& s) {
  return ranks_share_ep_group(s.attention_tp, s.ep);
}

// Heads one GPU of the step's attention rank attends with.
double local_attention_heads(const ModelSpec& m, const StepShape& s);
// The heads its attention kernel computes: the local ones, padded up to the
// sparse kernel's tile where the model has that many.
double attention_kernel_heads(const ModelSpec& m, const StepShape& s);

// The sum of `tokens` x `hidden` BF16 activations over the `tp` GPUs of an
// attention rank (a ring's traffic, within one NVLink domain).
Kernel make_all_reduce(std::string name, double tokens, int64_t hidden, int64_t tp);
// The output head's logits, `vocab` of them split over `tp` GPUs, gathered on one.
Kernel make_logits_gather(std::string name, double tokens, int64_t vocab, int64_t tp);

// The halves of an all-reduce, apart: a ring's reduce-scatter (each GPU ends
// with its slice of the sum) and all-gather (each GPU ends with every slice).
Kernel make_reduce_scatter(std::string name, double tokens, int64_t hidden, int64_t tp);
Kernel make_all_gather(std::string name, double tokens, int64_t hidden, int64_t tp);

// Throws InputError naming `field` where `tp` cannot split the model's
// attention or divide its EP group.
void require_attention_tp_fits(const ModelSpec& m, int64_t tp, int64_t ep, int64_t ep_per_node,
                               const InputLocation& at);
// Throws InputError naming `field` where the routed experts cannot split by
// columns: only over a tensor-parallel rank that is its own EP group, with no
// EPLB replicas (every GPU holds a slice of every expert already).
void require_column_split_fits(const ModelSpec& m, int64_t tp, int64_t ep, int64_t redundant_experts,
                               const InputLocation& at);

}  // namespace v41sim
