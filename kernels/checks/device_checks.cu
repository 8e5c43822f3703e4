#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kernels/attention/sparse_decode_cuda.h"
#include "kernels/checks/device_checks.h"
#include "kernels/common/bf16_values.h"
#include "kernels/common/compare.h"
#include "kernels/common/cuda_device.h"
#include "kernels/common/fp_codec.h"
#include "kernels/common/mma_fragments.h"
#include "kernels/common/random_values.h"
#include "kernels/common/v41_shapes.h"
#include "kernels/common/wgmma_probe.h"
#include "kernels/compress/compress_pool.h"
#include "kernels/engram/engram_gather.h"
#include "kernels/gemm/expert_gemm.h"
#include "kernels/gemm/expert_gemm_w4a8_tiling.h"
#include "kernels/indexer/index_key_block.h"
#include "kernels/indexer/indexer_cuda.h"
#include "kernels/indexer/indexer_reference.h"
#include "kernels/kv_quant/mxfp4_kv_cuda.h"
#include "kernels/kv_quant/mxfp4_kv_reference.h"
#include "kernels/mhc/mhc_cluster_slices.h"
#include "kernels/mhc/mhc_mixing.h"
#include "kernels/mhc/mhc_projection_tiles.h"

namespace v41sim::kernels {
namespace {

CheckResult within(const char* what, const std::vector<float>& got, const std::vector<float>& want,
                   float rel_tol) {
  const int64_t at = first_mismatch(got, want, rel_tol);
  if (at < 0) return {true, ""};
  if (static_cast<std::size_t>(at) >= got.size() || got.size() != want.size())
    return {false, std::string(what) + ": size differs"};
  return {false, std::string(what) + ": element " + std::to_string(at) + " is " +
                     std::to_string(got[static_cast<std::size_t>(at)]) + ", reference " +
                     std::to_string(want[static_cast<std::size_t>(at)])};
}

// For BF16-operand kernels: every value within rel_tol of the largest
// reference magnitude (rounding the operands moves values by a share of the
// row's scale, not of each value: a logit near zero is a sum of large terms).
CheckResult within_scale(const char* what, const std::vector<float>& got, const std::vector<float>& want,
                         float rel_tol) {
  float scale = 1.0f;
  for (float v : want) {
    if (std::isfinite(v)) scale = std::fmax(scale, std::fabs(v));
  }
  std::vector<float> scaled_got(got), scaled_want(want);
  for (float& v : scaled_got) v /= scale;
  for (float& v : scaled_want) v /= scale;
  return within(what, scaled_got, scaled_want, rel_tol);
}

// ||got - want|| / ||want|| within rel_tol (NaN never passes): the measure for
// BF16 operands, whose rounding spreads over every output a little.
CheckResult within_norm(const char* what, const std::vector<float>& got, const std::vector<float>& want,
                        double rel_tol) {
  if (got.size() != want.size()) return {false, std::string(what) + ": size differs"};
  const double relative = relative_norm_error(got, want);
  if (relative <= rel_tol) return {true, ""};
  if (std::isnan(relative)) return {false, std::string(what) + ": a value is not finite"};
  return {false, std::string(what) + ": relative error " + std::to_string(relative) + " over the tolerance"};
}

// The logits tolerance of each path: FP32 sums to float rounding; the tensor
// cores see the same values (E4M3 queries and FP4 keys widen to BF16 exactly)
// but add in their own order and accumulator, so they are held to the
// logits' scale.
CheckResult logits_match(const char* what, const std::vector<float>& got, const std::vector<float>& want,
                         IndexerMath math) {
  return math == IndexerMath::kTensorCores ? within_scale(what, got, want, 5e-3f)
                                           : within(what, got, want, 1e-3f);
}

template <typename T>
CheckResult exact(const char* what, const std::vector<T>& got, const std::vector<T>& want) {
  return got == want ? CheckResult{true, ""}
                     : CheckResult{false, std::string(what) + ": differs from the reference"};
}

}  // namespace

// BF16 values in, the reference on the same values widened (exactly): the
// entries match byte for byte, and so do the values read back (exact in BF16).
CheckResult check_mxfp4_kv() {
  const int64_t tokens = 1000, dim = 512;
  const auto kv = to_bf16_values(normal_values(static_cast<std::size_t>(tokens * dim), 11));
  const auto reference = quantize_mxfp4_kv_reference(from_bf16_values(kv), tokens, dim);
  const auto device = quantize_mxfp4_kv_cuda(kv, tokens, dim);
  const CheckResult q = exact("mxfp4 quantize", device, reference);
  if (!q.ok) return q;
  return exact("mxfp4 dequantize", from_bf16_values(dequantize_mxfp4_kv_cuda(device, tokens, dim)),
               dequantize_mxfp4_kv_reference(reference, tokens, dim));
}

// A prefill chunk's indexer inputs: `queries` queries of 32 heads sharing
// one sequence's 20,000 keys (a partial last tile in every kernel's tiling).
struct IndexerChunk {
  int64_t queries, heads = 32, positions = 20000;
  std::vector<uint8_t> q, keys;
  std::vector<float> w;
  explicit IndexerChunk(int64_t query_count)
      : queries(query_count),
        q(index_queries_e4m3(normal_values(static_cast<std::size_t>(queries * heads * kIndexDim), 21))),
        keys(quantize_index_keys_reference(normal_values(static_cast<std::size_t>(positions * kIndexDim), 23),
                                           positions)),
        w(normal_values(static_cast<std::size_t>(queries * heads), 22)) {}
  std::vector<float> reference() const {
    return indexer_logits_reference(q, w, keys, queries, heads, positions);
  }
};

CheckResult check_indexer(IndexerMath math) {
  // 6 queries: the tensor-core path packs them four to a CTA (one partial CTA).
  const IndexerChunk in(6);
  const int64_t topk = 512;
  const auto device = indexer_logits_cuda(in.q, in.w, in.keys, in.queries, in.heads, in.positions, math);
  const CheckResult logits = logits_match("indexer logits", device, in.reference(), math);
  if (!logits.ok) return logits;
  // Top-k of the same logits is exact.
  return exact("top-k", topk_cuda(device, in.queries, in.positions, topk),
               topk_reference(device, in.queries, in.positions, topk));
}

// The FP8 wgmma logits (Hopper only) on 10 queries (a CTA of 8 and one of
// 2, its second warpgroup's queries all past the last) over 20,000 positions
// (a partial last tile, a partial last CTA), held to the tensor-core tolerance.
CheckResult check_indexer_wgmma() {
  std::string why;
  if (!sm90a_device(&why)) return {false, "indexer logits (wgmma) not run: " + why};
  const IndexerChunk in(10);
  return logits_match("indexer logits (wgmma)",
                      indexer_logits_wgmma_cuda(in.q, in.w, in.keys, in.queries, in.heads, in.positions),
                      in.reference(), IndexerMath::kTensorCores);
}

// The FP8 wgmma decode logits (Hopper only): 3 requests, each over its own
// 20,003 keys (a partial last tile, a partial last CTA, a pool block of 3),
// first one query a request, then 6 (a token and 5 drafts sharing each key
// tile), held to the tensor-core tolerance, and the block maxima written
// beside them exactly those of the logits the kernel wrote; then a Reindex
// layer's logits in the pool those maxima build (the short last block among
// its blocks or not), likewise.
CheckResult check_indexer_wgmma_decode() {
  std::string why;
  if (!sm90a_device(&why)) return {false, "indexer decode logits (wgmma) not run: " + why};
  const int64_t requests = 3, heads = kV41IndexHeads, positions = 20003;
  const auto keys = quantize_index_keys_reference(
      normal_values(static_cast<std::size_t>(requests * positions * kIndexDim), 41), requests * positions);
  LogitsWithBlockMax got;
  for (const int request_queries : {6, 1}) {  // the one-query logits stay for the pool
    const int64_t queries = requests * request_queries;
    const auto q =
        index_queries_e4m3(normal_values(static_cast<std::size_t>(queries * heads * kIndexDim), 42));
    const auto w = normal_values(static_cast<std::size_t>(queries * heads), 43);
    got = indexer_decode_logits_wgmma_cuda(q, w, keys, queries, heads, positions, request_queries);
    const std::string what =
        "indexer decode logits (wgmma, " + std::to_string(request_queries) + " a request)";
    const CheckResult logits = logits_match(
        what.c_str(), got.logits,
        indexer_logits_reference(q, w, key_set_a_query(keys, queries, request_queries, positions), queries,
                                 heads, positions, true),
        IndexerMath::kTensorCores);
    if (!logits.ok) return logits;
    const CheckResult maxima = exact(("block max of the " + what).c_str(), got.block_max,
                                     block_max_reference(got.logits, queries, positions, kV41PoolBlockSize));
    if (!maxima.ok) return maxima;
  }
  const int64_t blocks = (positions + kV41PoolBlockSize - 1) / kV41PoolBlockSize;
  const auto pool = topk_cuda(got.block_max, requests, blocks, kV41PoolTopBlocks);
  const auto q2 =
      index_queries_e4m3(normal_values(static_cast<std::size_t>(requests * heads * kIndexDim), 44));
  const auto w2 = normal_values(static_cast<std::size_t>(requests * heads), 45);
  return logits_match(
      "pool logits (wgmma)",
      indexer_decode_pool_logits_wgmma_cuda(q2, w2, keys, pool, requests, heads, positions),
      pool_logits_reference(q2, w2, keys, pool, requests, heads, positions, kV41PoolBlockSize, true),
      IndexerMath::kTensorCores);
}

// The top-k alone, on rows with many ties (values on a coarse grid, so the
// k-th largest is shared across tiles): one pass (8,192), a last tile of one
// position, a last tile shorter than k, 32 tiles (a 512K-token context at
// ratio 2), a pool-sized k, candidates too many for the row pass cut into
// tiles again (140,000 positions, k 2,048: 35,552 candidates, then 10,240),
// and a k too large for tiles over a row too long for the row pass's shared
// memory (walked in memory); exact against the reference (ties to the lower
// position). Under either way of counting a pass's histogram (topk_cuda.h);
// the values crowd a few first-pass bins, so a warp's lanes share bins in
// every step.
CheckResult check_topk(HistogramCounting counting) {
  struct Case {
    int64_t positions, topk;
  };
  for (const Case& c : {Case{8192, 512}, Case{8193, 512}, Case{16484, 512}, Case{262144, 512},
                        Case{40000, 2048}, Case{140000, 2048}, Case{40000, 4500}}) {
    const int64_t queries = 3;
    std::vector<float> logits = normal_values(static_cast<std::size_t>(queries * c.positions), 51);
    for (float& v : logits) v = std::round(v * 8.0f) / 8.0f;
    const CheckResult r = exact("top-k", topk_cuda(logits, queries, c.positions, c.topk, counting),
                                topk_reference(logits, queries, c.positions, c.topk));
    if (!r.ok)
      return {false, r.detail + " (" + std::to_string(c.positions) + " positions, k " +
                         std::to_string(c.topk) + ")"};
  }
  return {true, ""};
}

namespace {

// Layer 20 builds the pool (logits + block maxima, then the top blocks); a
// Reindex layer scores only the pooled positions with its own query and takes
// its top-512 there. A decode batch of 3 requests, each over its own keys,
// with request_queries queries a request reading them (its token and the
// drafts it verifies; each its own pool). Each stage is checked on the
// device's own inputs, so a float rounding difference upstream cannot flip a
// later exact comparison.
CheckResult check_candidate_pool_of_requests(IndexerMath math, int64_t request_queries) {
  const int64_t requests = 3, queries = requests * request_queries, heads = kV41IndexHeads;
  const int64_t topk = kV41TopK, block = kV41PoolBlockSize;
  const int64_t positions = 20003;  // > 16,384 so the pool engages; a short last block
  const int64_t blocks = (positions + block - 1) / block;
  const auto keys = quantize_index_keys_reference(
      normal_values(static_cast<std::size_t>(requests * positions * kIndexDim), 31), requests * positions);
  const auto query_keys = key_set_a_query(keys, queries, request_queries, positions);
  const auto q = index_queries_e4m3(normal_values(static_cast<std::size_t>(queries * heads * kIndexDim), 32));
  const auto w = normal_values(static_cast<std::size_t>(queries * heads), 33);
  const LogitsWithBlockMax layer20 =
      indexer_logits_with_block_max_cuda(q, w, keys, queries, heads, positions, request_queries, math);
  const CheckResult logits =
      logits_match("pool-building logits", layer20.logits,
                   indexer_logits_reference(q, w, query_keys, queries, heads, positions, true), math);
  if (!logits.ok) return logits;
  const CheckResult maxima =
      exact("block max", layer20.block_max, block_max_reference(layer20.logits, queries, positions, block));
  if (!maxima.ok) return maxima;
  const auto pool = topk_cuda(layer20.block_max, queries, blocks, kV41PoolTopBlocks);
  const CheckResult pool_ok =
      exact("candidate pool", pool,
            candidate_pool_reference(layer20.block_max, queries, blocks, kV41PoolTopBlocks));
  if (!pool_ok.ok) return pool_ok;
  // A Reindex layer: its own query and head weights, layer 20's keys and pool.
  const auto q2 =
      index_queries_e4m3(normal_values(static_cast<std::size_t>(queries * heads * kIndexDim), 34));
  const auto w2 = normal_values(static_cast<std::size_t>(queries * heads), 35);
  const auto pooled =
      indexer_pool_logits_cuda(q2, w2, keys, pool, queries, heads, positions, request_queries, math);
  const CheckResult pooled_ok = logits_match(
      "pool logits", pooled,
      pool_logits_reference(q2, w2, query_keys, pool, queries, heads, positions, block, true), math);
  if (!pooled_ok.ok) return pooled_ok;
  return exact("reindex top-k", pool_topk_cuda(pooled, pool, queries, topk),
               pool_topk_reference(pooled, pool, queries, block, topk));
}

}  // namespace

// One query a request, then 2 and 6 (a token and 5 drafts: on tensor cores a
// CTA of 4 and one of 2 a request, which must not reach the next request's
// queries).
CheckResult check_candidate_pool(IndexerMath math) {
  for (const int64_t request_queries : {1, 2, 6}) {
    const CheckResult r = check_candidate_pool_of_requests(math, request_queries);
    if (!r.ok) return {false, r.detail + " (" + std::to_string(request_queries) + " queries a request)"};
  }
  return {true, ""};
}

// Both kernels write BF16 outputs: one rounding, at most 2^-9 of a value, on
// top of FP32 sums.
CheckResult check_sparse_decode() {
  const SparseDecodeInputs in = make_sparse_decode_inputs({6, 64, 512, 20000}, 3);
  return within("sparse decode", sparse_decode_cuda(in), sparse_decode_reference(in), 3e-3f);
}

// BF16 operands: the softmax weights carry 2^-9 relative rounding (Q comes in
// BF16, the entries are exact in BF16), and so does the output, so outputs of
// magnitude <= 1 may move by ~2e-3.
// Split as the launcher chooses (10 ways for 6 requests) and whole (one CTA
// a request finishing its own output).
// Both tensor-core kernels (mma.sync; wgmma, sm_90 devices only) so.
namespace {
CheckResult check_sparse_decode_tensor_cores(const std::string& kernel,
                                             std::vector<float> (*run)(const SparseDecodeInputs&, int)) {
  const SparseDecodeInputs in = make_sparse_decode_inputs({6, 64, 512, 20000}, 3);
  const std::vector<float> want = sparse_decode_reference(in);
  for (const int splits : {0, 1}) {
    const std::vector<float> got = run(in, splits);
    const std::string what = "sparse decode (" + kernel + (splits == 1 ? ", one split)" : ")");
    CheckResult r = within_norm(what.c_str(), got, want, 5e-3);
    if (r.ok) r = within_scale(what.c_str(), got, want, 2e-2f);  // and no value far off on its own
    if (!r.ok)
      return {false,
              r.detail + "; " + where_outputs_differ(got, want, in.shape.heads, kLatentDim, "request", 2e-2)};
  }
  return {true, ""};
}
}  // namespace

CheckResult check_sparse_decode_mma() {
  return check_sparse_decode_tensor_cores("mma", sparse_decode_mma_cuda);
}
CheckResult check_sparse_decode_wgmma() {
  return check_sparse_decode_tensor_cores("wgmma", sparse_decode_wgmma_cuda);
}

CheckResult check_compress() {
  const int64_t tokens = 4096;
  const auto kv = to_bf16_values(normal_values(static_cast<std::size_t>(tokens * 512), 2));
  const auto score = to_bf16_values(normal_values(static_cast<std::size_t>(tokens * 512), 3));
  const auto ape = normal_values(2 * 512, 4);
  const auto a = dequantize_mxfp4_kv_reference(compress_ratio2_cuda(kv, score, ape, tokens), tokens / 2, 512);
  const auto b = dequantize_mxfp4_kv_reference(
      compress_ratio2_reference(from_bf16_values(kv), from_bf16_values(score), ape, tokens), tokens / 2, 512);
  // expf may differ by an ulp between host and device: allow a rare one-step difference.
  int64_t differ = 0;
  for (std::size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
  if (differ < static_cast<int64_t>(a.size() / 1000)) return {true, ""};
  return {false, "compress: " + std::to_string(differ) + " values differ from the reference"};
}

CheckResult check_engram() {
  std::vector<uint8_t> table(100000 * kEngramRowBytes);
  for (std::size_t i = 0; i < table.size(); ++i) table[i] = static_cast<uint8_t>(i * 13);
  std::vector<int64_t> rows(20000);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>((i * 2654435761ULL) % 100000);
  return exact("engram gather", engram_gather_cuda(table, rows), engram_gather_reference(table, rows));
}

// One site step of an mHC form against the reference: the streams and the
// next block's input in BF16 (a value may round the other way where the
// device fuses a multiply-add the host does not: one BF16 step, 0.4% of a
// value), the next coefficients from FP32 tensor-core sums against FP64 ones.
CheckResult mhc_step_matches(const std::string& form, const MhcStepResult& got, const MhcStepResult& want) {
  const auto streams = from_bf16_values(got.streams), streams_want = from_bf16_values(want.streams);
  const auto input = from_bf16_values(got.next_input), input_want = from_bf16_values(want.next_input);
  for (const CheckResult& r : {within_scale("streams", streams, streams_want, 1e-2f),
                               within_norm("streams", streams, streams_want, 1e-3),
                               within_scale("next input", input, input_want, 1e-2f),
                               within_norm("next input", input, input_want, 1e-3),
                               within_scale("next coefficients", got.next_coeffs, want.next_coeffs, 1e-3f)}) {
    if (!r.ok) return {false, form + ": " + r.detail};
  }
  return {true, ""};
}

// One site's inputs and the reference's step for `hidden` and `tokens`.
struct MhcCase {
  int64_t hidden, tokens;
  std::vector<uint16_t> X, y;
  std::vector<float> coeffs;
  MhcWeights next;
  MhcStepResult want;
  std::string where;
};
MhcCase mhc_case(int64_t hidden, int64_t tokens) {
  MhcCase c{hidden, tokens, {}, {}, {}, random_mhc_weights(hidden, 7), {}, ""};
  c.X = to_bf16_values(normal_values(static_cast<std::size_t>(tokens * kStreams * hidden), 4));
  c.y = to_bf16_values(normal_values(static_cast<std::size_t>(tokens * hidden), 5));
  c.coeffs = mhc_coefficients_reference(c.X, random_mhc_weights(hidden, 6), tokens, hidden);
  c.want = mhc_step_reference(c.X, c.y, c.coeffs, c.next, tokens, hidden);
  c.where = " (hidden " + std::to_string(hidden) + ", " + std::to_string(tokens) + " tokens)";
  return c;
}

// V4.1's hidden size and 1000 (rows of 125 vectors, 250 reduction steps; 15
// or 16 vectors a cluster slice); 37 tokens leave partial tiles of every
// kind and split the projection's reduction over CTAs; 8448 tokens fill the
// GPU with one split, and walk each persistent cluster over many tiles.
const std::vector<std::pair<int64_t, int64_t>> kMhcCases{{5120, 37}, {1000, 37}, {1000, 8448}};

// The three-kernel form and the token-tile single pass at each tokens-a-CTA choice.
CheckResult check_mhc() {
  for (const auto& [hidden, tokens] : kMhcCases) {
    const MhcCase c = mhc_case(hidden, tokens);
    CheckResult r = mhc_step_matches(
        "three kernels", mhc_three_kernel_cuda(c.X, c.y, c.coeffs, c.next, c.tokens, c.hidden), c.want);
    for (int per_cta = 1; r.ok && per_cta <= kMaxFusedTokens; per_cta *= 2) {
      r = mhc_step_matches("single pass, " + std::to_string(per_cta) + " tokens a CTA",
                           mhc_fused_cuda(c.X, c.y, c.coeffs, c.next, per_cta, c.tokens, c.hidden), c.want);
    }
    if (!r.ok) return {false, r.detail + c.where};
  }
  return {true, ""};
}

// The cluster single pass at each cluster size the device schedules (8, the
// portable size, must), at the plan's tile and at 1, 3 and 8 token rows a tile.
CheckResult check_mhc_cluster() {
  std::vector<int> sizes;
  for (const int ctas : kClusterSizes) {
    if (mhc_cluster_plan_here(ctas, 37, 5120).clusters > 0) sizes.push_back(ctas);
  }
  // A non-portable size this device cannot run is left out (the harness says so and times the other).
  if (sizes.empty() || sizes.front() != kClusterSizes[0])
    return {false, "cluster pass: the portable cluster size does not schedule"};
  for (const auto& [hidden, tokens] : kMhcCases) {
    const MhcCase c = mhc_case(hidden, tokens);
    for (const int ctas : sizes) {
      for (const int rows : {0, 1, 3, 8}) {
        const std::string form =
            "cluster pass, " + std::to_string(ctas) + " CTAs, " +
            (rows == 0 ? std::string("the plan's tile") : std::to_string(rows) + " rows a tile");
        const CheckResult r = mhc_step_matches(
            form, mhc_cluster_pass_cuda(c.X, c.y, c.coeffs, c.next, ctas, rows, c.tokens, c.hidden), c.want);
        if (!r.ok) return {false, r.detail + c.where};
      }
    }
  }
  return {true, ""};
}

// BF16 projections on cuBLASLt against float64 dot products of the same BF16 values.
CheckResult check_bf16_gemm() {
  const int64_t m = 64, n = 384, k = 5120;  // V4.1's router shape
  std::vector<uint16_t> a, w;
  for (float v : normal_values(static_cast<std::size_t>(m * k), 95)) a.push_back(mma::to_bf16(v));
  for (float v : normal_values(static_cast<std::size_t>(n * k), 96)) w.push_back(mma::to_bf16(v));
  std::vector<float> want(static_cast<std::size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < k; ++c)
        dot += double{mma::from_bf16(a[static_cast<std::size_t>(i * k + c)])} *
               mma::from_bf16(w[static_cast<std::size_t>(j * k + c)]);
      want[static_cast<std::size_t>(i * n + j)] = static_cast<float>(dot);
    }
  }
  return within_norm("bf16 gemm", bf16_gemm_cuda(a, w, m, n, k), want, 1e-5);
}

CheckResult check_expert_gemm() {
  const int64_t m = 64, n = 256, k = 5120;
  const ExpertWeights w = quantize_expert_weights(normal_values(static_cast<std::size_t>(n * k), 81), n, k);
  const std::vector<uint8_t> a = normal_e4m3_codes(static_cast<std::size_t>(m * k), 82);
  const CheckResult one =
      within("expert gemm", expert_gemm_cuda(a, 0.5f, m, w), expert_gemm_reference(a, 0.5f, m, w), 1e-3f);
  if (!one.ok) return one;
  // Three experts in one batched launch, each against its own reference.
  const int64_t groups = 3, rows = 32;
  const std::vector<ExpertWeights> experts =
      scaled_expert_weights(groups, n, k, 90, [](int64_t, int64_t, int64_t) { return 0; });
  const std::vector<uint8_t> activations = normal_e4m3_codes(static_cast<std::size_t>(groups * rows * k), 93);
  return within("grouped expert gemm", expert_gemm_grouped_cuda(activations, 0.5f, rows, experts),
                experts_gemm_reference(activations, 0.5f, rows, experts), 1e-3f);
}

namespace {

// An mma.sync expert GEMM of ours on each of its tilings (m = 5, 20, 130 rows
// per expert, 130 spanning several m-tiles), two experts per launch, against
// each expert's reference. The weights' group scales span 2^20, beyond any
// single FP8 tensor scale, so a scale applied to the wrong column or group
// shows. run(m, activations, weights) gives the kernel's outputs and the
// reference's for `activations` random values (experts x m x k).
template <class Run>
CheckResult check_mma_expert_gemm(const std::string& name, Run run) {
  const int64_t experts = 2, n = 128;
  for (const auto [m, k] : {std::pair<int64_t, int64_t>{5, 128}, {5, 384}, {20, 384}, {130, 384}}) {
    const std::vector<ExpertWeights> weights =
        scaled_expert_weights(experts, n, k, 110, [](int64_t row, int64_t col, int64_t e) {
          return static_cast<int>((row + 3 * (col / kWeightScaleGroup) + e) % 21) - 10;
        });
    const std::string what = name + ", m " + std::to_string(m) + ", k " + std::to_string(k);
    const auto [got, want] = run(m, experts * m * k, weights);
    const CheckResult r = within_norm(what.c_str(), got, want, 1e-5);
    if (!r.ok) return {false, r.detail + "; " + where_outputs_differ(got, want, m, n)};
  }
  return {true, ""};
}

}  // namespace

// W4A8: E4M3 activations with a tensor scale.
CheckResult check_expert_gemm_w4a8() {
  return check_mma_expert_gemm("w4a8 expert gemm", [](int64_t m, int64_t values,
                                                      const std::vector<ExpertWeights>& weights) {
    const std::vector<uint8_t> a = normal_e4m3_codes(static_cast<std::size_t>(values), 120);
    return std::pair{expert_gemm_w4a8_cuda(a, 0.5f, m, weights), experts_gemm_reference(a, 0.5f, m, weights)};
  });
}

// W4A16: BF16 activations, the weights widened to BF16 with their group scales.
CheckResult check_expert_gemm_w4a16() {
  return check_mma_expert_gemm(
      "w4a16 expert gemm", [](int64_t m, int64_t values, const std::vector<ExpertWeights>& weights) {
        const std::vector<uint16_t> a = to_bf16_values(normal_values(static_cast<std::size_t>(values), 121));
        return std::pair{expert_gemm_w4a16_cuda(a, m, weights), experts_gemm_w4a16_reference(a, m, weights)};
      });
}

// A wgmma kernel (Hopper only; either schedule) on 5, 130 and 300 rows per expert (one
// partial m-tile; two and three, the last partial), two 128-row weight tiles,
// three k-blocks, two experts per launch. Group scales span 2^20 over rows and
// k-blocks, and up to 2^3 within a row's k-block: the folding is exact there,
// so a scale applied to the wrong weight row or block shows.
CheckResult check_expert_gemm_w4a8_wgmma(WgmmaSchedule schedule) {
  std::string why;
  if (!sm90a_device(&why)) return {false, "w4a8 wgmma expert gemm not run: " + why};
  const int64_t experts = 2, n = 256, k = 384;
  const std::vector<ExpertWeights> weights =
      scaled_expert_weights(experts, n, k, 130, [](int64_t row, int64_t col, int64_t e) {
        return static_cast<int>((row * 5 + (col / w4a8::kBlockK) * 7 + e) % 21) - 10 +
               static_cast<int>((row + col / kWeightScaleGroup) % 4);
      });
  for (const int64_t m : {5, 130, 300}) {
    const std::vector<uint8_t> a = normal_e4m3_codes(static_cast<std::size_t>(experts * m * k), 140);
    const bool warp_specialized = schedule == WgmmaSchedule::kWarpSpecialized;
    const std::string what = std::string(warp_specialized ? "w4a8 wgmma expert gemm (warp-specialized)"
                                                          : "w4a8 wgmma expert gemm") +
                             ", m " + std::to_string(m);
    const std::vector<float> got = expert_gemm_w4a8_cuda(
        a, 0.5f, m, weights, warp_specialized ? W4a8Kernel::kWgmmaWarpSpecialized : W4a8Kernel::kWgmma);
    const std::vector<float> want = experts_gemm_reference(a, 0.5f, m, weights);
    const CheckResult r = within_norm(what.c_str(), got, want, 1e-5);
    if (!r.ok) return {false, r.detail + "; " + where_outputs_differ(got, want, m, n)};
  }
  return {true, ""};
}

// The layouts the wgmma kernels rest on, one instruction each (sm_90 devices
// only): where one is read otherwise, the detail says which and how.
CheckResult check_wgmma_layouts() {
  std::string why;
  if (!sm90a_device(&why)) return {false, "wgmma layout probe not run: " + why};
  const WgmmaLayoutProbe probe = probe_wgmma_layouts();
  return {probe.ok(), probe.detail};
}

const std::vector<NamedCheck>& all_checks() {
  static const std::vector<NamedCheck> checks{
      {"mxfp4_kv", check_mxfp4_kv},
      {"indexer_fp32", [] { return check_indexer(IndexerMath::kFp32Units); }},
      {"indexer_tensor_cores", [] { return check_indexer(IndexerMath::kTensorCores); }},
      {"candidate_pool_fp32", [] { return check_candidate_pool(IndexerMath::kFp32Units); }},
      {"candidate_pool_tensor_cores", [] { return check_candidate_pool(IndexerMath::kTensorCores); }},
      {"wgmma_layouts", check_wgmma_layouts},
      {"indexer_wgmma", check_indexer_wgmma},
      {"indexer_wgmma_decode", check_indexer_wgmma_decode},
      {"topk", [] { return check_topk(HistogramCounting::kWarpAggregated); }},
      {"topk_per_lane", [] { return check_topk(HistogramCounting::kPerLane); }},
      {"sparse_decode_fp32", check_sparse_decode},
      {"sparse_decode_tensor_cores", check_sparse_decode_mma},
      {"sparse_decode_wgmma", check_sparse_decode_wgmma},
      {"compress", check_compress},
      {"engram", check_engram},
      {"mhc", check_mhc},
      {"mhc_cluster", check_mhc_cluster},
      {"expert_gemm", check_expert_gemm},
      {"expert_gemm_w4a8", check_expert_gemm_w4a8},
      {"expert_gemm_w4a16", check_expert_gemm_w4a16},
      {"expert_gemm_w4a8_wgmma", [] { return check_expert_gemm_w4a8_wgmma(WgmmaSchedule::kLockstep); }},
      {"expert_gemm_w4a8_wgmma_ws",
       [] { return check_expert_gemm_w4a8_wgmma(WgmmaSchedule::kWarpSpecialized); }},
      {"bf16_gemm", check_bf16_gemm},
  };
  return checks;
}

}  // namespace v41sim::kernels
