#include "sim/report/claims.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "sim/capacity/memory_fit.h"
#include "sim/common/input_error.h"
#include "sim/cost/draft_choice.h"
#include "sim/cost/gpu_cost_model.h"
#include "sim/cost/step_cost.h"
#include "sim/costing/deployment_plan.h"
#include "sim/graph/step_graph.h"
#include "sim/hw/gpu_profile_loader.h"
#include "sim/model/model_loader.h"
#include "sim/report/model_views.h"
#include "sim/report/step_view.h"

namespace v41sim {
namespace {

// A figure the article gives with "~" or "约" holds when the derived value is
// within this relative distance of it.
constexpr double kApproxTolerance = 0.05;
constexpr double kMillionDecimal = 1e6;
constexpr double kMillionBinary = 1048576.0;  // 2^20
constexpr double kGB = 1e9;

// "3 Full x 178 + 1 Full x 356": the global bytes per token, summed by mode
// and per-layer size, straight from the layer table.
std::string kv_breakdown(const ModelAnalysis& m) {
  std::vector<std::pair<std::string, int>> terms;
  for (const LayerKv& layer : m.kv.layers) {
    if (layer.global_bytes_per_token <= 0) continue;
    const std::string term = fmt::format("{} x {:g}", layer.mode, layer.global_bytes_per_token);
    auto it = std::find_if(terms.begin(), terms.end(), [&](const auto& t) { return t.first == term; });
    if (it == terms.end()) {
      terms.emplace_back(term, 1);
    } else {
      ++it->second;
    }
  }
  std::string out;
  for (const auto& [term, count] : terms)
    out += fmt::format("{}{} {}", out.empty() ? "" : " + ", count, term);
  return out;
}

bool near(double derived, double claimed) {
  return std::fabs(derived - claimed) <= kApproxTolerance * std::fabs(claimed);
}

// A claimed KV figure is the model files' own index keys'; an engine storing
// another key format a file defines (every Hopper engine's FP8 one) stores
// more. Each model's figure (`figure` of it re-analysed) with each such format
// is a finding, and a verdict of holds becomes holds only with the files' own keys.
template <typename Figure>
void holds_only_with_own_index_keys(Claim& c, std::initializer_list<const ModelAnalysis*> models,
                                    const char* unit, Figure figure) {
  std::vector<std::string> own_keys, other_keys;
  for (const ModelAnalysis* m : models) {
    if (!m->spec.attention.indexer) continue;
    const std::string& own = m->spec.attention.indexer->key_cache;
    own_keys.push_back(fmt::format("{} {}, {} B a key", m->spec.name, own, m->spec.cache(own).bytes));
    for (const std::string& format : other_index_key_formats(m->spec)) {
      const double value = figure(analyze_with_index_keys(m->spec, format));
      c.findings.push_back(fmt::format("{} with its index keys stored as {}: {:.2f} {}", m->spec.name,
                                       index_key_format_text(m->spec, format, false), value, unit));
      other_keys.push_back(fmt::format("{} {:.0f} {} ({}, {} B a key)", m->spec.name, value, unit, format,
                                       m->spec.cache(format).bytes));
    }
  }
  if (c.verdict != Verdict::kHolds || other_keys.empty()) return;
  c.verdict = Verdict::kHoldsOnlyIf;
  c.condition = fmt::format(
      "the index keys are stored in the model files' own formats ({}); in the other formats "
      "the files define: {}",
      fmt::join(own_keys, "; "), fmt::join(other_keys, "; "));
}

Claim kv_per_token(const ClaimInputs& in) {
  const double v41 = in.v41_flash.kv.global_bytes_per_token;
  const double v4 = in.v4_flash.kv.global_bytes_per_token;
  Claim c{"kv_bytes_per_token", "V4.1-Flash stores 890 B of KV per token, V4-Flash 3514 B", {}, {}, {}};
  const bool holds = std::round(v41) == 890 && std::floor(v4) == 3514;
  c.verdict = holds ? Verdict::kHolds : Verdict::kDoesNotHold;
  c.findings.push_back(fmt::format("{} global KV = {:.2f} B/token ({})", in.v41_flash.spec.name, v41,
                                   kv_breakdown(in.v41_flash)));
  c.findings.push_back(fmt::format("{} global KV = {:.2f} B/token ({})", in.v4_flash.spec.name, v4,
                                   kv_breakdown(in.v4_flash)));
  c.findings.push_back(fmt::format("ratio {:.2f}x; sliding-window state excluded from both", v4 / v41));
  // Both figures take the index keys as the model files store them.
  holds_only_with_own_index_keys(c, {&in.v41_flash, &in.v4_flash}, "B/token",
                                 [](const ModelAnalysis& keyed) { return keyed.kv.global_bytes_per_token; });
  return c;
}

Claim session_size(const ClaimInputs& in) {
  const KvLayout& kv = in.v41_flash.kv;
  Claim c{"session_1m_bytes", "a 1M-token V4.1-Flash session needs about 890 MB of global KV", {}, {}, {}};
  const double decimal = kv.global_bytes_per_token * kMillionDecimal;
  const double binary = kv.global_bytes_per_token * kMillionBinary;
  c.verdict = near(decimal, 890e6) ? Verdict::kHolds : Verdict::kDoesNotHold;
  c.findings.push_back(fmt::format("10^6 tokens: {:.1f} MB", decimal / 1e6));
  c.findings.push_back(
      fmt::format("2^20 tokens: {:.1f} MB = {:.3f} GiB", binary / 1e6, binary / std::pow(2.0, 30)));
  c.findings.push_back(
      fmt::format("plus bounded per-request state {:.2f} MB (window {:.2f} MB, compressor {:.3f} MB, "
                  "the latter assumed)",
                  static_cast<double>(kv.per_request_state_bytes()) / 1e6,
                  static_cast<double>(kv.window_state_bytes) / 1e6,
                  static_cast<double>(kv.compressor_state_bytes) / 1e6));
  holds_only_with_own_index_keys(c, {&in.v41_flash}, "MB at 10^6 tokens", [](const ModelAnalysis& keyed) {
    return keyed.kv.global_bytes_per_token * kMillionDecimal / 1e6;
  });
  return c;
}

// "Persistent KV down to 1/8 of V4's" (the V4.1 paper: roughly 1/8 of
// V4-Flash's, on SSD or in host memory). V4.1 persists its global KV only: its
// window state is rebuilt by bounded replay. V4-Flash must then persist
// window state too, and how much depends on how often it keeps it, which no
// source we read gives: every token's window entries, a checkpoint of the
// window every P tokens, or none. So the claim holds only for a range of P,
// and the verdict names it.
Claim persistent_kv(const ClaimInputs& in) {
  constexpr double kClaimedRatio = 8;
  const KvLayout& v41 = in.v41_flash.kv;
  const KvLayout& v4 = in.v4_flash.kv;
  Claim c{"persistent_kv_eighth",
          "V4.1-Flash's persistent KV (SSD or host memory) is about 1/8 of V4-Flash's",
          {},
          {},
          {}};
  const double v41_bytes = v41.global_bytes_per_token;
  const double window = static_cast<double>(v4.window_state_bytes);
  const double every_token =
      v4.global_bytes_per_token + static_cast<double>(v4.window_entry_bytes_all_layers);
  const double global_only = v4.global_bytes_per_token / v41_bytes;
  const double most = every_token / v41_bytes;
  c.findings.push_back(
      fmt::format("{} persists {:.2f} B/token, its global KV alone (window state rebuilt by "
                  "bounded replay)",
                  in.v41_flash.spec.name, v41_bytes));
  c.findings.push_back(
      fmt::format("{}: global KV alone {:.2f} B/token ({:.2f}x); with every token's window "
                  "entries ({} B/token over its layers) {:.2f} B/token ({:.1f}x)",
                  in.v4_flash.spec.name, v4.global_bytes_per_token, global_only,
                  v4.window_entry_bytes_all_layers, every_token, most));
  // Tokens between window checkpoints for a ratio r: window / (r x V4.1 - V4 global).
  const auto interval = [&](double ratio) {
    return window / (ratio * v41_bytes - v4.global_bytes_per_token);
  };
  const double low_ratio = std::max(global_only, kClaimedRatio * (1 - kApproxTolerance));
  const double high_ratio = std::min(most, kClaimedRatio * (1 + kApproxTolerance));
  if (window <= 0 || global_only >= kClaimedRatio || most <= kClaimedRatio) {
    // The claimed ratio lies outside what the window's storage can make of
    // it: the nearer end decides.
    c.verdict = near(window <= 0 || global_only >= kClaimedRatio ? global_only : most, kClaimedRatio)
                    ? Verdict::kHolds
                    : Verdict::kDoesNotHold;
    return c;
  }
  c.verdict = Verdict::kHoldsOnlyIf;
  c.condition = fmt::format(
      "{} keeps a checkpoint of its window state ({:.2f} MB) about every {:.0f} tokens of context "
      "({:.0f}-{:.0f} "
      "for a ratio within 5% of 8); keeping every token's window entries gives 1/{:.1f}, keeping none "
      "1/{:.2f}; no "
      "source we read says which {} does",
      in.v4_flash.spec.name, window / 1e6, interval(kClaimedRatio), interval(high_ratio), interval(low_ratio),
      most, global_only, in.v4_flash.spec.name);
  c.findings.push_back(fmt::format("a checkpoint every {:.0f} tokens: {:.0f} B/token, 8x {}'s",
                                   interval(kClaimedRatio), kClaimedRatio * v41_bytes,
                                   in.v41_flash.spec.name));
  return c;
}

FitRequest node_request(int64_t context, WeightFormats weights, DensePlacement placement,
                        SourcedValue reserve) {
  FitRequest r;
  r.gpus = 8;
  r.ep = 8;
  r.context_tokens = context;
  r.weights = std::move(weights);
  r.dense_placement = placement;
  r.reserve_fraction = std::move(reserve);
  return r;
}

Claim sessions_on_h200(const ClaimInputs& in) {
  Claim c{"h200_sessions",
          "8 x H200 (1,128 GB) hold ~1,200 1M-token V4.1-Flash sessions, ~320 for V4-Flash",
          {},
          {},
          {}};
  const double hbm = 8 * in.h200.hbm_bytes.value();
  auto naive = [hbm](const ModelAnalysis& m, double tokens) {
    return hbm / (m.kv.global_bytes_per_token * tokens);
  };
  const double v41_bin = naive(in.v41_flash, kMillionBinary);
  const double v41_dec = naive(in.v41_flash, kMillionDecimal);
  const double v4_bin = naive(in.v4_flash, kMillionBinary);
  const double v4_dec = naive(in.v4_flash, kMillionDecimal);
  c.findings.push_back(
      fmt::format("all {:.0f} GB as KV: V4.1 {:.0f} (2^20 tokens) / {:.0f} (10^6); "
                  "V4-Flash {:.0f} (2^20) / {:.0f} (10^6)",
                  hbm / kGB, v41_bin, v41_dec, v4_bin, v4_dec));
  const auto context = static_cast<int64_t>(kMillionBinary);
  for (const ModelAnalysis* m : {&in.v41_flash, &in.v4_flash}) {
    const FitRequest r =
        node_request(context, m->spec.weights, DensePlacement::kReplicated, in.reserve_fraction);
    const FitResult f = fit_memory(*m, in.h200, r);
    c.findings.push_back(
        fmt::format("{} with its released weights ({:.1f} GB/GPU, EP 8, attention "
                    "replicated) and {}: {} sessions of 2^20 tokens",
                    m->spec.name, f.weight_bytes_per_gpu / kGB,
                    fmt::format("a {:.0f}% reserve ({})", 100 * r.reserve_fraction.value(),
                                r.reserve_fraction.provenance().kind_name()),
                    f.sessions));
    // The engines a buyer runs may store the index keys otherwise than the
    // model file does (no Hopper engine runs an FP4 indexer): the model files
    // define those keys too, with their sources.
    for (const SessionsWithIndexKeys& keyed : sessions_with_other_index_keys(*m, in.h200, r)) {
      c.findings.push_back(fmt::format(
          "{} storing its index keys as {}: {:.0f} B/token, {} sessions of 2^20 tokens", m->spec.name,
          index_key_format_text(m->spec, keyed.format, true), keyed.global_bytes_per_token, keyed.sessions));
    }
  }
  // The arithmetic splits each session's KV over the 8 GPUs; a tensor-parallel
  // engine keeps its one latent whole on every GPU (sim/graph/tensor_parallel.h).
  FitRequest one_rank =
      node_request(context, in.v41_flash.spec.weights, DensePlacement::kReplicated, in.reserve_fraction);
  one_rank.attention_tp = 8;
  const FitResult tp = fit_memory(in.v41_flash, in.h200, one_rank);
  c.findings.push_back(fmt::format(
      "{} served as one tensor-parallel attention rank of 8 (as vLLM's --tensor-parallel-size 8: every GPU "
      "holds each session's one KV latent whole): {} sessions",
      in.v41_flash.spec.name, tp.sessions));
  const bool headline = near(v41_bin, 1200) || near(v41_dec, 1200);
  const bool baseline = near(v4_bin, 320) || near(v4_dec, 320);
  c.verdict = headline && baseline ? Verdict::kHoldsOnlyIf : Verdict::kDoesNotHold;
  c.condition =
      "all 1,128 GB of HBM hold KV: no weights, activations or window state are counted "
      "(and the two figures use different meanings of 1M: 2^20 for ~1,200, 10^6 for ~320)";
  return c;
}

Claim h100_weights(const ClaimInputs& in) {
  const ModelAnalysis& m = in.v41_flash;
  Claim c{
      "h100_ep8_weights", "H100 at EP=8 carries ~69 GB of FP8 weights per card, leaving ~11 GB", {}, {}, {}};
  WeightFormats all_fp8 = m.spec.weights;
  all_fp8.routed_experts = m.spec.weights.dense;
  all_fp8.embedding = m.spec.weights.dense;
  const SourcedValue no_reserve = SourcedValue::assumed(0.0, "no reserve, as in the claim");
  const auto context = static_cast<int64_t>(kMillionBinary);
  const FitResult even =
      fit_memory(m, in.h100, node_request(context, all_fp8, DensePlacement::kSharded, no_reserve));
  const FitResult replicated =
      fit_memory(m, in.h100, node_request(context, all_fp8, DensePlacement::kReplicated, no_reserve));
  const FitResult released =
      fit_memory(m, in.h100, node_request(context, m.spec.weights, DensePlacement::kReplicated, no_reserve));
  // The article counts the backbone (552B); a deployment that drafts holds the draft's stages too.
  const double backbone_even = even.weight_bytes_per_gpu - even.draft_bytes_per_gpu;
  const double left_even = even.kv_bytes_per_gpu + even.draft_bytes_per_gpu;
  std::string with_draft;
  if (m.spec.draft) {
    with_draft = fmt::format(" (with the {} draft's {:.1f}B parameters: {:.1f} GB/GPU, {:.1f} GB left)",
                             m.spec.draft->kind, static_cast<double>(m.params.draft_total()) / 1e9,
                             even.weight_bytes_per_gpu / kGB, even.kv_bytes_per_gpu / kGB);
  }
  c.findings.push_back(
      fmt::format("all weights FP8 ({}), split evenly over 8: {:.1f} GB/GPU, {:.1f} GB left{}",
                  m.spec.weights.dense.describe(), backbone_even / kGB, left_even / kGB, with_draft));
  c.findings.push_back(
      fmt::format("all FP8 with attention/shared/embedding replicated (DP attention): "
                  "{:.1f} GB/GPU, {:.1f} GB left",
                  replicated.weight_bytes_per_gpu / kGB, replicated.kv_bytes_per_gpu / kGB));
  c.findings.push_back(
      fmt::format("released FP4 experts ({}), rest replicated: {:.1f} GB/GPU, {:.1f} GB left",
                  m.spec.weights.routed_experts.describe(), released.weight_bytes_per_gpu / kGB,
                  released.kv_bytes_per_gpu / kGB));
  const bool arithmetic = near(backbone_even, 69e9) && near(left_even, 11e9);
  c.verdict = arithmetic ? Verdict::kHoldsOnlyIf : Verdict::kDoesNotHold;
  c.condition =
      "every weight (experts included) is FP8 and all of them, attention and embeddings too, "
      "are split evenly over the 8 GPUs" +
      std::string(m.spec.draft ? ", and the speculative draft's stages, which a deployment that drafts holds "
                                 "too, are left out"
                               : "") +
      "; the released FP4 experts halve the expert bytes";
  return c;
}

Claim active_params(const ClaimInputs& in) {
  const ActiveParams& a = in.v41_flash.active;
  Claim c{"active_params",
          "V4.1-Flash activates 8B parameters per prefill token and 16B per decode token",
          {},
          {},
          {}};
  const bool holds = std::round(a.prefill_per_token / 1e9) == 8 && std::round(a.decode_per_token / 1e9) == 16;
  c.verdict = holds ? Verdict::kHolds : Verdict::kDoesNotHold;
  const int64_t encoder =
      in.v41_flash.spec.ced ? in.v41_flash.spec.ced->encoder_layers : in.v41_flash.spec.num_layers;
  c.findings.push_back(fmt::format(
      "prefill {:.2f}B per prompt token (layers 0-{} + the KV/index projections "
      "of later KV-source layers); decode {:.2f}B (all {} layers + head)",
      a.prefill_per_token / 1e9, encoder - 1, a.decode_per_token / 1e9, in.v41_flash.spec.num_layers));
  c.findings.push_back(
      fmt::format("decode / prefill = {:.2f}; plus the decoder tail: {} tokens x {:.2f}B once per request",
                  a.decode_per_token / a.prefill_per_token, a.prefill_tail_tokens,
                  static_cast<double>(a.prefill_tail_params_per_token) / 1e9));
  return c;
}

// V4.1-Flash's decode step on one GPU's cost model, verifying the drafts a
// serving run on it would (each GPU its own count), its EP group holding the
// fewest EPLB replicas that deal the routed experts over it (none at EP 8;
// every expert taken as popular as the others).
struct ServedDecode {
  StepTiming timing;
  DraftChoice drafts;
  double per_token_us() const { return timing.total_us / drafts.tokens_per_sequence; }
};
ServedDecode decode_step(const ModelAnalysis& m, const KernelCostModel& cost, int64_t batch, int64_t context,
                         int64_t ep = 8, EngineChoices engine = {}) {
  StepShape shape;
  shape.engine = engine;
  shape.phase = Phase::kDecode;
  shape.batch = batch;
  shape.context = context;
  shape.ep = ep;
  shape.ep_per_node = cost.gpu().nvlink_domain();
  shape.redundant_experts = m.spec.moe ? replicas_to_deal(m.spec.moe->routed_experts, ep, 0) : 0;
  const SpeculativeStep served = as_served(m, shape, cost);
  return {time_step(build_step_graph(m, served.shape), cost), served.choice};
}

// "H20 at batch 1: 20% of the step bound by HBM bandwidth, ...": what a
// step's time is bound by, largest share first.
std::string bound_shares(const StepTiming& t, int64_t batch) {
  const std::pair<Bound, const char*> kinds[] = {{Bound::kMemory, "HBM bandwidth"},
                                                 {Bound::kCompute, "tensor math"},
                                                 {Bound::kWidening, "CUDA-core widening"},
                                                 {Bound::kFold, "CUDA-core fold"},
                                                 {Bound::kLink, "EP transfers"},
                                                 {Bound::kLatency, "GEMM load pipelines"},
                                                 {Bound::kLaunch, "launch or graph replay"},
                                                 {Bound::kTail, "under-filled waves"}};
  std::vector<std::pair<double, const char*>> shares;
  for (const auto& [bound, name] : kinds) shares.emplace_back(time_bound_by(t, bound) / t.total_us, name);
  std::stable_sort(shares.begin(), shares.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out = fmt::format("H20 at batch {}, time by what binds it:", batch);
  for (const auto& [share, name] : shares) {
    if (share >= 0.005) out += fmt::format(" {} {:.0f}%,", name, 100 * share);
  }
  out.pop_back();
  return out;
}

// The same comparison with the routed experts as the engines on Hopper run
// them (W4A16 on Marlin's kernels): the verdict is judged on the assumed
// kernels, this says how far the engines' own move it.
struct EnginesW4a16 {
  std::string finding;
  double batch_one_ratio = 1;  // H20 / H100 time per output token at batch 1
};
EnginesW4a16 engines_w4a16(const ClaimInputs& in, int64_t context) {
  EnginesW4a16 out{
      "with the routed experts in W4A16 on both (Marlin's kernels, the engines' path for V4's experts "
      "on Hopper: --experts-bf16), H20 / H100 per output token:"};
  const EngineChoices w4a16{.experts_bf16_math = true};
  for (const int64_t batch : {1, 64}) {
    const ServedDecode h20 = decode_step(in.v41_flash, in.h20_decode, batch, context, 8, w4a16);
    const ServedDecode h100 = decode_step(in.v41_flash, in.h100_decode, batch, context, 8, w4a16);
    const double ratio = h20.per_token_us() / h100.per_token_us();
    if (batch == 1) out.batch_one_ratio = ratio;
    out.finding += fmt::format("{} batch {}: {:.2f} / {:.2f} ms ({:+.0f}%)", batch == 1 ? "" : ";", batch,
                               h20.per_token_us() / 1e3, h100.per_token_us() / 1e3, 100 * (ratio - 1));
  }
  return out;
}

Claim h20_decode(const ClaimInputs& in) {
  Claim c{"h20_decode",
          "H20 is the best GPU for decode: decode is bound by HBM bandwidth, where its 4.0 TB/s beats H100's "
          "3.35 TB/s, and the compute it lacks would sit idle",
          {},
          {},
          {}};
  constexpr int64_t kContext = 131072;
  int64_t faster_up_to = 0;  // the largest batch up to which the H20's token is the sooner at every batch
  bool still_faster = true;
  std::string steps;
  double last_ratio = 1;
  int64_t last_batch = 0;
  double best_margin = 0;  // the H20's largest lead, as a share of the H100's time per token
  for (const int64_t batch : {1, 4, 16, 32, 64, 128}) {
    const ServedDecode h20 = decode_step(in.v41_flash, in.h20_decode, batch, kContext);
    const ServedDecode h100 = decode_step(in.v41_flash, in.h100_decode, batch, kContext);
    const double ratio = h20.per_token_us() / h100.per_token_us();
    still_faster = still_faster && ratio < 1;
    if (still_faster) faster_up_to = batch;
    best_margin = std::max(best_margin, 1 - ratio);
    steps += fmt::format("{}batch {}: {:.2f} / {:.2f} ms ({} / {} drafts)", steps.empty() ? "" : "; ", batch,
                         h20.per_token_us() / 1e3, h100.per_token_us() / 1e3, h20.drafts.drafts,
                         h100.drafts.drafts);
    last_ratio = ratio;
    last_batch = batch;
    if (batch == 1 || batch == 64) c.findings.push_back(bound_shares(h20.timing, batch));
  }
  c.findings.insert(
      c.findings.begin(),
      fmt::format(
          "decode time per output token, {}-token context, EP 8, H20 / H100 (kernel model, H20 {}, "
          "H100 {}; each step verifying the drafts a serving run on that GPU would, its time over the "
          "tokens a sequence can expect from it at the draft's {}): {}",
          kContext, in.h20_decode.params().status, in.h100_decode.params().status,
          draft_acceptance_phrase(in.v41_flash.spec), steps));
  const EnginesW4a16 engines = engines_w4a16(in, kContext);
  c.findings.push_back(engines.finding);
  c.findings.push_back(fmt::format(
      "HBM: H20 {:.2f} TB/s, H100 {:.2f} TB/s ({}); per-token cost not checked: no public H20 price",
      in.h20_decode.gpu().hbm_bytes_per_s.value() / 1e12, in.h100_decode.gpu().hbm_bytes_per_s.value() / 1e12,
      in.h20_decode.gpu().hbm_bytes_per_s.provenance().kind_name()));
  if (faster_up_to == 0) {
    c.verdict = Verdict::kDoesNotHold;
    return c;
  }
  c.verdict = Verdict::kHoldsOnlyIf;
  c.condition =
      still_faster
          ? "judged on time per output token alone (no public H20 price)"
          : fmt::format(
                "decode batches stay at or below {} per GPU (at {} tokens, EP 8), where its "
                "time per output token is at most {:.2g}% shorter; above that the H20's capped tensor rate "
                "binds (its token {:.0f}% slower at batch {}); judged on time per output token alone (no "
                "public H20 price)",
                faster_up_to == 1 ? std::string("1 sequence") : fmt::format("{} sequences", faster_up_to),
                kContext, 100 * best_margin, 100 * (last_ratio - 1), last_batch);
  if (engines.batch_one_ratio >= 1) {
    c.condition += fmt::format(
        "; and only with the W4A8 experts the model assumes: with the W4A16 ones engines run on Hopper "
        "(Marlin's) "
        "its token is {:.0f}% slower at batch 1 too",
        100 * (engines.batch_one_ratio - 1));
  }
  return c;
}

// HBM bytes of a step's mHC kernels, in the form asked for.
double mhc_bytes(const ModelAnalysis& m, MhcForm form) {
  StepShape shape;
  shape.phase = Phase::kPrefill;
  shape.context = 16384;
  shape.engine.mhc_form = form;
  double bytes = 0;
  for (const LayerKernels& layer : build_step_graph(m, shape).layers) {
    for (const Kernel& k : layer.kernels())
      bytes += k.name.find("mhc") != std::string::npos ? k.hbm_bytes : 0.0;
  }
  return bytes;
}

Claim mhc_traffic(const ClaimInputs& in) {
  Claim c{
      "mhc_single_pass",
      "V4's three-kernel mHC moves close to twice the activation traffic of its lower bound; V4.1's single "
      "fused pass removes that",
      {},
      {},
      {}};
  const ModelAnalysis& m = in.v41_flash;
  if (!m.spec.mhc) {
    c.verdict = Verdict::kDoesNotHold;
    c.findings.push_back(m.spec.name + " has no mHC");
    return c;
  }
  const double three = mhc_bytes(m, MhcForm::kThreeKernel);
  const double fused = mhc_bytes(m, MhcForm::kSinglePass);
  const double ratio = three / fused;
  c.findings.push_back(fmt::format(
      "{} streams, a 16K-token prefill step: three kernels {:.1f} GB, one pass {:.1f} GB of HBM traffic, "
      "{:.2f}x; the single pass reads the {} streams and writes them once per block, the three kernels read "
      "them again for the coefficients and the merge (derived from the graph's traffic accounting; 'close to "
      "twice' read as 1.5x to 2x)",
      m.spec.mhc->streams, three / kGB, fused / kGB, ratio, m.spec.mhc->streams));
  c.findings.push_back(
      "our CUDA kernels (kernels/mhc) measure both forms once a GPU is lent: v41sim targets compares their "
      "bytes and times");
  c.verdict = ratio >= 1.5 && ratio <= 2.0 ? Verdict::kHolds : Verdict::kDoesNotHold;
  return c;
}

// "EP 72 (48 replicas)", "EP 16 over 2 NVLink domains".
std::string ep_group_name(const ModelAnalysis& m, const KernelCostModel& cost, int64_t ep) {
  const int64_t replicas = replicas_to_deal(m.spec.moe->routed_experts, ep, 0);
  const int64_t domains = (ep + cost.gpu().nvlink_domain() - 1) / cost.gpu().nvlink_domain();
  return fmt::format("EP {}{}{}", ep, replicas > 0 ? fmt::format(" ({} replicas)", replicas) : "",
                     domains > 1 ? fmt::format(" over {} NVLink domains", domains) : "");
}

// One GPU's decode token at a smaller and a larger EP group, batch by batch.
struct EpComparison {
  std::string gpu;     // "H200"
  std::string larger;  // "EP 16 over 2 NVLink domains"
  std::string findings;
  // Per batch, the larger group's time per output token over the smaller's.
  std::vector<std::pair<int64_t, double>> ratios;

  bool larger_slower_everywhere() const {
    return std::all_of(ratios.begin(), ratios.end(), [](const auto& r) { return r.second > 1; });
  }
  bool larger_faster_everywhere() const {
    return std::all_of(ratios.begin(), ratios.end(), [](const auto& r) { return r.second < 1; });
  }
  // "on H200, EP 16 over 2 NVLink domains is slower at batch 64 (to +13.9% a token) and faster at batch 1, 16
  // (to -12.7%)"
  std::string outcome() const {
    std::string slower, faster, same;
    double most = 1, least = 1;
    for (const auto& [batch, ratio] : ratios) {
      std::string& list = ratio > 1 ? slower : ratio < 1 ? faster : same;
      list += fmt::format("{}{}", list.empty() ? "" : ", ", batch);
      most = std::max(most, ratio);
      least = std::min(least, ratio);
    }
    std::vector<std::string> parts;
    if (!slower.empty())
      parts.push_back(fmt::format("slower at batch {} (to {:+.1f}% a token)", slower, 100 * (most - 1)));
    if (!faster.empty())
      parts.push_back(fmt::format("faster at batch {} (to {:+.1f}%)", faster, 100 * (least - 1)));
    if (!same.empty()) parts.push_back(fmt::format("as fast at batch {}", same));
    return fmt::format("on {}, {} is {}", gpu, larger, fmt::format("{}", fmt::join(parts, " and ")));
  }
};

EpComparison compare_ep(const ModelAnalysis& m, const KernelCostModel& cost, const std::string& gpu,
                        int64_t small_ep, int64_t large_ep, int64_t context) {
  EpComparison out{gpu, ep_group_name(m, cost, large_ep), "", {}};
  out.findings = fmt::format("{}, {} / {}, time per output token:", cost.gpu().name,
                             ep_group_name(m, cost, small_ep), out.larger);
  const auto ms = [](double us) { return us / 1e3; };
  const auto at = [](const StepTiming& t, KernelClass k) { return t.class_us[static_cast<std::size_t>(k)]; };
  for (const int64_t batch : {1, 16, 64}) {
    const ServedDecode small = decode_step(m, cost, batch, context, small_ep);
    const ServedDecode large = decode_step(m, cost, batch, context, large_ep);
    out.ratios.emplace_back(batch, large.per_token_us() / small.per_token_us());
    out.findings += fmt::format(
        "{} batch {}: {:.2f} / {:.2f} ms (in the step: routed experts' GEMMs {:.1f} / {:.1f} ms, EP "
        "transfers "
        "{:.1f} / {:.1f} ms)",
        batch == 1 ? "" : ";", batch, ms(small.per_token_us()), ms(large.per_token_us()),
        ms(at(small.timing, KernelClass::kGroupedGemm)), ms(at(large.timing, KernelClass::kGroupedGemm)),
        ms(at(small.timing, KernelClass::kAllToAll)), ms(at(large.timing, KernelClass::kAllToAll)));
  }
  return out;
}

// What the comparisons say of the claim: it holds where every larger group is
// the slower, fails where every one is the faster, and holds only under the
// conditions the comparisons name otherwise.
void judge_ep_claim(Claim& c, const EpComparison& across, const std::optional<EpComparison>& within) {
  const bool all_slower =
      across.larger_slower_everywhere() && (!within || within->larger_slower_everywhere());
  const bool all_faster =
      across.larger_faster_everywhere() && (!within || within->larger_faster_everywhere());
  if (all_slower || all_faster) {
    c.verdict = all_slower ? Verdict::kHolds : Verdict::kDoesNotHold;
    return;
  }
  c.verdict = Verdict::kHoldsOnlyIf;
  c.condition =
      across.larger_slower_everywhere()
          ? fmt::format("the larger group reaches across NVLink domains ({})", across.outcome())
          : fmt::format(
                "the larger group reaches across NVLink domains and decode batches are large enough "
                "that its EP transfers outweigh its ranks' lighter expert reads ({})",
                across.outcome());
  if (within && within->larger_faster_everywhere()) {
    c.condition += fmt::format("; not within one NVLink domain ({}), so that domain still pays in decode",
                               within->outcome());
  } else if (within) {
    c.condition += fmt::format("; within one NVLink domain, {}", within->outcome());
  }
  c.condition +=
      "; decode steps alone: an aggregated group also runs all its GPUs' prompts, which the "
      "cheapest-deployment section serves";
}

Claim ep_group_size(const ClaimInputs& in) {
  Claim c{
      "ep_group_size",
      "Once the weights fit, EP is best as small and as near one machine as it can be (fewer all-to-alls "
      "across machines, better expert balance); GB200's 72-GPU NVLink domain, built for large-scale EP, is "
      "no longer needed",
      {},
      {},
      {}};
  constexpr int64_t kContext = 131072;
  const ModelAnalysis& m = in.v41_flash;
  if (!m.spec.moe) {
    c.findings.push_back(m.spec.name + " has no experts: no EP group to size");
    return c;
  }
  const int64_t node = in.h200_decode.gpu().nvlink_domain();
  const int64_t rack = in.gb200_decode.gpu().nvlink_domain();
  // The routed experts deal over at most twice their number of ranks with no
  // more replicas than experts: the largest group compared.
  const int64_t routed = m.spec.moe->routed_experts;
  for (const auto& [gpu, groups] :
       {std::pair{&in.h200_decode.gpu(), int64_t{2}}, std::pair{&in.gb200_decode.gpu(), int64_t{1}}}) {
    if (groups * gpu->nvlink_domain() > 2 * routed) {
      throw InputError(
          gpu->nvlink_domain_gpus.where(),
          fmt::format("expected at most {} GPUs in one NVLink domain (claims compares an EP group over {}, "
                      "and {}'s {} routed experts deal over at most {} ranks with no more replicas "
                      "than experts), got {}",
                      2 * routed / groups, groups > 1 ? "two such domains" : "the whole domain", m.spec.name,
                      routed, 2 * routed, gpu->nvlink_domain()));
    }
  }
  c.findings.push_back(fmt::format(
      "decode alone at {} tokens of context, the same batch per GPU on either group (a GPU's price and count "
      "cancel: time per token is cost per token), each step verifying the drafts serving would and routed "
      "by chance over experts taken as equally popular (kernel model: H200 {}, GB200 {})",
      kContext, in.h200_decode.params().status, in.gb200_decode.params().status));
  const EpComparison across = compare_ep(m, in.h200_decode, "H200", node, 2 * node, kContext);
  c.findings.push_back(across.findings);
  std::optional<EpComparison> within;
  if (rack > node) {
    within = compare_ep(m, in.gb200_decode, "GB200 NVL72", node, rack, kContext);
    c.findings.push_back(within->findings);
  } else {
    c.findings.push_back(
        fmt::format("{}: its NVLink domain ({} GPUs) is no larger than an H200 node's ({}): "
                    "no larger group within it to compare",
                    in.gb200_decode.gpu().name, rack, node));
  }
  judge_ep_claim(c, across, within);
  return c;
}

}  // namespace

std::vector<Claim> check_claims(const ClaimInputs& in) {
  return {kv_per_token(in),  session_size(in), persistent_kv(in), sessions_on_h200(in), h100_weights(in),
          active_params(in), mhc_traffic(in),  h20_decode(in),    ep_group_size(in)};
}

std::vector<Claim> check_bundled_claims(const Catalog& catalog, const ModelAnalysis& v41_flash,
                                        const SourcedValue& reserve_fraction) {
  const ModelAnalysis v4_flash = analyze_model(load_model_by_name(catalog, "deepseek_v4_flash"));
  const GpuProfile h100 = load_gpu_profile_by_name(catalog, "h100_sxm");
  const GpuProfile h200 = load_gpu_profile_by_name(catalog, "h200");
  const auto decode = [&catalog](const char* gpu) {
    return std::make_unique<GpuCostModel>(catalog.data_dir(), catalog.resolve_gpu(gpu), true);
  };
  const auto h20_decode = decode("h20"), h100_decode = decode("h100_sxm"), h200_decode = decode("h200"),
             gb200_decode = decode("gb200_nvl72");
  return check_claims({v41_flash, v4_flash, h100, h200, reserve_fraction, h20_decode->cost(),
                       h100_decode->cost(), h200_decode->cost(), gb200_decode->cost()});
}

std::string verdict_text(const Claim& c) {
  switch (c.verdict) {
    case Verdict::kHolds:
      return "holds";
    case Verdict::kDoesNotHold:
      return "does not hold";
    case Verdict::kHoldsOnlyIf:
      return "holds only if " + c.condition;
  }
  return "?";
}

Table claims_table(const std::vector<Claim>& claims) {
  Table t("Seed-article claims, recomputed", {"claim", "verdict", "derived figures"});
  for (const Claim& c : claims) {
    std::string findings;
    for (const std::string& f : c.findings) findings += (findings.empty() ? "" : "; ") + f;
    t.add_row({c.statement, verdict_text(c), findings});
  }
  t.add_note("'~' figures hold within 5%; every figure derived from the model and GPU files");
  return t;
}

nlohmann::json claims_json(const std::vector<Claim>& claims) {
  nlohmann::json out = nlohmann::json::array();
  for (const Claim& c : claims) {
    const char* verdict = c.verdict == Verdict::kHolds         ? "holds"
                          : c.verdict == Verdict::kHoldsOnlyIf ? "holds_only_if"
                                                               : "does_not_hold";
    out.push_back({{"id", c.id},
                   {"statement", c.statement},
                   {"verdict", verdict},
                   {"verdict_text", verdict_text(c)},
                   {"condition", c.condition},
                   {"findings", c.findings}});
  }
  return {{"claims", out}};
}

}  // namespace v41sim
