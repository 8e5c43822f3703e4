// StepShape: one forward step's batch as the graph builder needs it.
#pragma once

#include <cstdint>

namespace v41sim {

enum class Phase { kPrefill, kDecode };

// mHC's form: as the model file says (its single_pass), or either way.
enum class MhcForm { kAsModel, kSinglePass, kThreeKernel };

// The kernels an engine runs where engines differ and the step model assumes
// one kind (README, "How the step model works"): the defaults are the assumed
// ones. A step shape and a deployment's pool each hold one.
struct EngineChoices {
  // Decode: a sequence's queries (its token and its drafts) read its index
  // keys once between them, as a logits kernel that takes its next_n queries
  // together does; false: once a query, as an engine that splits them into
  // sequences of one query (attention_block.cpp).
  bool draft_queries_share_index_keys = true;
  // A Reindex layer scores only its candidate pool, as a sparse logits kernel
  // does (DeepGEMM's sparse_mqa_logits, ours); false: every visible position,
  // the rest masked after, as engines without one do (attention_block.cpp).
  bool reindex_scores_pool_only = true;
  // The routed experts multiply BF16 activations on BF16 tensor cores, their
  // narrow weights widened to BF16 (W4A16, as Marlin's MoE kernels, SGLang's
  // and vLLM's path for V4's FP4 experts on Hopper); false: FP8 activations
  // on FP8 (or native FP8 x FP4) tensor cores, as DeepGEMM's kernels (W4A8).
  // The dispatch carries the activations as the experts take them.
  bool experts_bf16_math = false;
  // mHC in the form the model file names (V4.1: one pass a block), or in the
  // other: V4's three kernels (coefficients, pre-mix, post-merge), whose
  // traffic an engine pays where it fuses no pass (vLLM's V4.1 past its fused
  // kernel's token range, PR #56633: the post, a split-K projection re-reading
  // the streams, the pre epilogue), or one pass (residual_mixing.h).
  MhcForm mhc_form = MhcForm::kAsModel;
};

struct StepShape {
  Phase phase = Phase::kDecode;
  int64_t batch = 1;       // sequences in the step (per attention rank: a GPU, or attention_tp of them)
  int64_t context = 1;     // prefill: prompt tokens each; decode: history tokens each
  int64_t new_tokens = 0;  // prefill: tokens computed per sequence (the rest is a cached prefix); 0 = all
  // Prefill: of the `batch` prompts, those whose chunk does not end them.
  // Under CED their decoder layers, and the sampling head, wait for the
  // prompt's last chunk (the decoder replays only the last window rows).
  int64_t continuing = 0;
  int64_t ep = 8;  // expert-parallel group size
  // GPUs one attention rank spans (tensor-parallel attention, tensor_parallel.h):
  // each runs all of the rank's tokens with its share of the query heads and of
  // the output projection, the rest of the attention block on every GPU alike,
  // and sums the block's output with the others (an all-reduce). 1: data-parallel
  // attention, a rank a GPU. Above 1 the EP group is the rank's GPUs, or
  // several ranks' (ep a multiple: each GPU then takes a slice of its rank's
  // tokens to the experts, scatters_tokens_to_experts).
  int64_t attention_tp = 1;
  // A tensor-parallel rank's routed experts split by columns (each GPU a slice
  // of every expert: SGLang's --tp without --ep, its Marlin MoE) instead of
  // by experts (EP, each GPU whole experts): every GPU then runs every routed
  // row on its slice, and no rank is busier than another.
  bool experts_split_by_columns = false;
  int64_t ep_per_node = 8;  // EP ranks in one NVLink domain: callers set the GPU's nvlink_domain()
  // Replicas of the hottest routed experts over the EP group (EPLB): each rank
  // holds (routed + redundant) / ep experts and reads the weights of those its
  // tokens reach. The speculative draft's own experts get none.
  int64_t redundant_experts = 0;
  // GEMMs of one block that read the same input run as one (projection_fusion.h).
  bool fuse_input_projections = true;
  // Decode: run the speculative draft stages, and the draft tokens each
  // sequence verifies. A step with drafts verifies some: verifying() (sim/cost/
  // draft_choice.h) sets both; on a shape not yet given its drafts (a
  // deployment's template, `step`'s flags) include_draft says speculation is on.
  bool include_draft = true;
  int64_t decode_tokens_per_sequence = 1;  // 1 + draft tokens verified per step
  EngineChoices engine;                    // kernels where engines differ; the defaults are the assumed ones
  // Two-micro-batch overlap: one micro-batch's EP all-to-all runs while the
  // other computes, so a layer takes less than the sum (step_cost.h).
  bool overlap_communication = false;
  // Busiest EP rank's routed tokens over the mean (>= 1), as the placement
  // leaves it; see expert_load.h.
  double ep_load_imbalance = 1.0;
  // The tokens each rank of the EP group sends the experts, on average, over this rank's own. The ranks'
  // batches differ (data-parallel attention: one rank may run a prompt's chunk while the others run a few
  // decode tokens or none, or decode more sequences than the others), and the routed experts take
  // the group's tokens: their rows follow the group, while the router, the shared experts and this rank's
  // all-to-all follow its own tokens. 1: every rank runs this shape.
  double expert_token_share = 1.0;
  // Each step's routing falls unevenly by chance on top of that
  // (busiest_rank); false: every rank receives exactly its share, as
  // benchmarks that simulate balanced routing arrange.
  bool routed_by_chance = true;
  // A decode step that also carries prompt chunks (an aggregated engine that
  // mixes them in, as vLLM's chunked prefill and SGLang's mixed chunks do):
  // `batch` prompts each compute `new_tokens` ending at `context`. Their
  // tokens share every GEMM with the decode tokens (weights read once);
  // attention and the indexer run per group. 0 prompts: a plain step.
  struct PrefillChunks {
    int64_t batch = 0;
    int64_t new_tokens = 0;
    int64_t context = 0;
    int64_t continuing = 0;  // chunks that do not end their prompt (as StepShape::continuing)
  };
  PrefillChunks mixed_prefill;
  // A decode step one rank runs while another rank of its EP group runs a
  // prompt step (an aggregated engine running prompts in steps of their own,
  // data-parallel attention): the ranks meet in the experts, so it runs as the
  // prompt step does, its kernels launched rather than replayed from a CUDA
  // graph and its EP transfers in normal mode (as SGLang's data-parallel
  // attention runs every rank once any rank extends).
  bool beside_prompts = false;
  // Attention ranks whose tokens meet in the EP group's experts.
  int64_t ranks_in_ep_group() const { return ep / attention_tp; }
  bool is_mixed() const { return phase == Phase::kDecode && mixed_prefill.batch > 0; }
  // A step of decode alone, as engines run it: replayed from a CUDA graph,
  // its EP transfers by the low-latency kernels.
  bool decode_only() const { return phase == Phase::kDecode && !is_mixed() && !beside_prompts; }
};

}  // namespace v41sim
