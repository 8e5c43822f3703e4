// StepGraph: the ordered kernels of one forward step, layer by layer.
//
// Token counts follow the phase: decode runs every layer on one token per
// sequence; prefill runs every layer on the whole prompt, except under CED
// (V4.1), where layers past the encoder run on the last `decoder_keep_tokens`
// only and the decoder's KV-source layers still project the whole prompt.
// After the backbone come the output head and, in decode, the draft stages
// and the draft's head.
//
// Two-micro-batch overlap (StepShape::overlap_communication) splits the step
// in two halves that take turns on the SMs and on the links: the graph then
// holds the first micro-batch's kernels (half the sequences, or half of a
// single prompt's new tokens; the larger half where a count is odd), the
// second's where it differs, and says it runs `micro_batches` of them. A
// kernel whose time does not shrink with its tokens (weight reads at small
// batch, a transfer's fixed cost) is paid twice; step_cost.h lays the halves
// out.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/graph/kernel.h"
#include "sim/graph/step_shape.h"
#include "sim/model/model_analysis.h"

namespace v41sim {

// How a decode step carrying prompt chunks is modelled, for outputs that show one.
inline constexpr const char* kMixedStepAssumption =
    "a decode step carrying prompt chunks runs its GEMMs, experts and norms on both groups' tokens (each "
    "weight read once) and attention, the indexer and top-k per group; its EP transfers use the normal "
    "kernels and it is timed as launched kernels, no CUDA-graph replay (assumed, as SGLang runs mixed "
    "batches by default; vLLM V1 replays all but attention as piecewise graphs for batches within its "
    "capture sizes, which would make such a step shorter by the launch overhead its small kernels pay); "
    "a rank taking no chunk in a step where others do decodes as they run";

// How a decode step beside another rank's prompt step is modelled (StepShape::beside_prompts).
inline constexpr const char* kBesidePromptsAssumption =
    "a rank decoding beside another rank's prompt step runs as that step runs: its kernels launched, no "
    "CUDA-graph replay, and its EP transfers by the normal kernels (assumed, as SGLang's data-parallel "
    "attention runs every rank once any rank has prompt tokens: DeepEP's auto mode picks normal, and the "
    "ranks' CUDA graphs replay only where every rank decodes)";

// The mode of the layer that projects the draft's block onto the vocabulary.
inline constexpr const char* kDraftHeadMode = "Draft head";

// How the draft's output is modelled, for outputs that show a step with drafts.
inline constexpr const char* kDraftHeadAssumption =
    "each sequence's block of draft positions goes through a final norm and the backbone's output head "
    "(its weights shared, none of the draft's own: assumed, as V3's MTP modules and DFlash's block "
    "drafter share their target's head); any further heads of the draft (DSpark's Markov and confidence "
    "heads) are left out: no shapes are published";

// How a decode sequence's drafts read the indexer's keys, for outputs that
// show a step with drafts on a model with an indexer
// (StepShape::draft_queries_share_index_keys).
inline constexpr const char* kDraftIndexKeysShared =
    "a sequence's token and drafts read its index keys once between them, as a logits kernel that takes "
    "them together does (assumed: DeepGEMM's sm90 paged logits take 1, 2 or 4 queries a sequence, ours "
    "up to 8); --index-keys-per-query reads them once a query";
inline constexpr const char* kDraftIndexKeysApart =
    "each query reads its index keys, a sequence's drafts apart from its token (--index-keys-per-query)";

// How a Reindex layer scores, for outputs that show a step of a model with a
// candidate pool (StepShape::reindex_scores_pool_only).
inline constexpr const char* kReindexScoresPool =
    "a Reindex layer's indexer scores its candidate pool alone, as a sparse logits kernel does (DeepGEMM's "
    "sparse_mqa_logits on sm100 and sm120, ours on sm90; assumed on Hopper, where engines score every "
    "position and mask); --reindex-scores-every-position scores them all";
inline constexpr const char* kReindexScoresEveryPosition =
    "a Reindex layer's indexer scores every visible position and masks those outside its candidate pool "
    "(--reindex-scores-every-position)";

// How the routed experts multiply, for outputs that show a step of an MoE
// model with narrow expert weights (StepShape::experts_bf16_math).
inline constexpr const char* kExpertsFp8Math =
    "the routed experts multiply FP8 activations on FP8 tensor cores (W4A8 for FP4 weights, as DeepGEMM's "
    "kernels: widened to FP8 where the GPU has no FP4 tensor cores, taken as stored where it has); "
    "--experts-bf16 runs them as W4A16";
inline constexpr const char* kExpertsBf16Math =
    "the routed experts multiply BF16 activations on BF16 tensor cores, their weights widened to BF16 "
    "in every tile of Marlin's (W4A16, as Marlin's MoE kernels, SGLang's and vLLM's path for V4's FP4 "
    "experts on Hopper: --experts-bf16; tiles: defaults.yaml grouped_gemm.weight_only_tile); the "
    "dispatch carries BF16 activations";

struct LayerKernels {
  int64_t layer = 0;  // backbone layer id; head, draft stages and draft head follow num_layers
  std::string mode;   // the layer plan's mode, or "Head" / "Draft" / kDraftHeadMode
  double tokens = 0;
  // The layer's kernels, in launch order, never changed once built: layers of
  // one kind share one list, so a step's graph copies no kernel.
  std::shared_ptr<const std::vector<Kernel>> kernel_list = std::make_shared<const std::vector<Kernel>>();
  // Layers of one kind (the same number, within one list of layers) run the
  // same kernels: the graph built them once. Backbone kinds are numbered
  // first, then the draft stages' one; -1: the heads.
  int64_t kind = -1;
  const std::vector<Kernel>& kernels() const { return *kernel_list; }
};

struct StepGraph {
  StepShape shape;                   // the whole step's, as asked
  std::vector<LayerKernels> layers;  // the first micro-batch's kernels
  int64_t micro_batches = 1;         // 2 when the step overlaps and its batch splits
  // The second micro-batch's kernels where it differs from the first (an odd
  // batch or token count: the smaller half); empty where the two are alike.
  // Its layers are some of the first's (the first has no fewer prompts
  // ending), in the same order.
  std::vector<LayerKernels> second_layers;
};

// The micro-batches of a step: where it overlaps and its batch splits, its two
// halves (with overlap off), the larger first (the sequences, a single
// prompt's new tokens, or, mixed, each group split; continuing prompts go to
// the second as far as it holds them); else the step as it is, alone.
std::vector<StepShape> micro_batches_of(const StepShape& shape);

// The second micro-batch's kernels for the first's layer `i`: its own where
// the halves differ, the first's where they are alike; null where it runs none
// of that layer, or the step runs one micro-batch.
const LayerKernels* second_micro_batch_layer(const StepGraph& graph, std::size_t i);

// One backbone layer of a step (a micro-batch's shape), built alone. The step
// graph builds each kind of layer once (what this reads of a layer: its role,
// mode, ratio, sources, MoE, Engram, CED half) and copies it; a test builds
// every layer with this to check that shortcut.
LayerKernels backbone_layer(const ModelAnalysis& model, const StepShape& shape, const LayerPlanEntry& plan);

// Sequences one step may carry per GPU: far past what any GPU's memory holds
// (each keeps at least a token of KV), and small enough that a step's token
// and tile counts stay exact in 64-bit integers.
inline constexpr int64_t kMaxSequencesPerStep = int64_t{1} << 24;

// Throws InputError naming the flag for a batch, context or EP size that cannot be.
void validate_step_shape(const ModelAnalysis& model, const StepShape& shape);
StepGraph build_step_graph(const ModelAnalysis& model, const StepShape& shape);
// The same, written over `graph`: a graph reused from step to step keeps its
// storage, so building the next one allocates little (the serving runs' step
// cache builds thousands).
void build_step_graph(const ModelAnalysis& model, const StepShape& shape, StepGraph& graph);

}  // namespace v41sim
