// V4.1 sparse attention decode: the CPU reference against hand-checkable cases,
// and the CUDA kernel against the reference where a GPU exists.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/attention/sparse_decode_reference.h"
#include "kernels/attention/sparse_decode_splits.h"
#include "kernels/common/mma_fragments.h"
#include "kernels/common/v41_shapes.h"
#include "sim/cost/cost_params.h"
#include "tests/kernels/device_check_support.h"
#include "tests/test_data.h"

namespace v41sim::kernels {
namespace {

TEST(SparseDecode, EntrySizesMatchTheModelFile) {
  const ModelAnalysis v41 = testing::analyze("deepseek_v4_1_flash");
  EXPECT_EQ(kMainEntryBytes, v41.spec.cache(v41.spec.attention.main_cache).bytes);
  EXPECT_EQ(kWindowEntryBytes, v41.spec.cache(v41.spec.attention.window_cache).bytes);
  EXPECT_EQ(kWindowTokens, v41.spec.attention.sliding_window);
}

// One valid key and a sink far below it: the output is that key's value.
TEST(SparseDecode, OneKeyGivesItsValue) {
  SparseDecodeInputs in = make_sparse_decode_inputs({1, 2, 4, 8}, 1);
  for (int32_t& t : in.topk) t = -1;
  in.topk[2] = 5;
  in.window_len[0] = 0;
  for (float& s : in.sink) s = -1e4f;
  const auto out = sparse_decode_reference(in);
  for (int64_t h = 0; h < 2; ++h) {
    for (int i = 0; i < kLatentDim; ++i) {
      EXPECT_NEAR(out[h * kLatentDim + i], main_entry_value(in.main_kv.data() + 5 * kMainEntryBytes, i),
                  1e-5);
    }
  }
}

// A dominant sink takes the probability mass and the output shrinks towards zero.
TEST(SparseDecode, TheSinkTakesMassButAddsNoValue) {
  SparseDecodeInputs in = make_sparse_decode_inputs({2, 4, 32, 64}, 2);
  const auto base = sparse_decode_reference(in);
  for (float& s : in.sink) s = 50.0f;
  const auto sunk = sparse_decode_reference(in);
  double base_norm = 0, sunk_norm = 0;
  for (std::size_t i = 0; i < base.size(); ++i) {
    base_norm += std::fabs(base[i]);
    sunk_norm += std::fabs(sunk[i]);
  }
  EXPECT_LT(sunk_norm, 1e-6 * base_norm + 1e-9);
}

// The tensor-core kernel's widening of main entries, four parts of 128 dims
// per entry as its threads do it: each value the per-value decode rounded to BF16.
TEST(SparseDecode, WidenedEntryPartsMatchTheValues) {
  const SparseDecodeInputs in = make_sparse_decode_inputs({1, 2, 4, 16}, 3);
  for (int64_t e = 0; e < 16; ++e) {
    const uint8_t* entry = in.main_kv.data() + e * kMainEntryBytes;
    uint32_t row[kLatentDim / 2];
    for (int part = 0; part < 4; ++part) widen_main_entry_part(entry, part * 128, 128, row + part * 64);
    for (int i = 0; i < kLatentDim; ++i) {
      const auto got = static_cast<uint16_t>(row[i / 2] >> (16 * (i % 2)));
      ASSERT_EQ(got, mma::to_bf16(main_entry_value(entry, i))) << "entry " << e << " dim " << i;
    }
  }
}

// The window's widening: every E4M3 byte in every position of a word, with
// every E8M0 scale (inside the exact range by bit operations, outside it by
// the float path), equal to the per-value decode rounded to BF16.
TEST(SparseDecode, WidenedWindowPartsMatchTheValues) {
  uint8_t entry[kWindowEntryBytes] = {};
  uint32_t row[kWindowScaleGroup / 2];
  for (int scale = 0; scale < 255; ++scale) {
    entry[kLatentDim] = static_cast<uint8_t>(scale);
    for (int byte = 0; byte < 256; ++byte) {
      for (int i = 0; i < kWindowScaleGroup; ++i) entry[i] = static_cast<uint8_t>(byte + 37 * i);
      widen_window_entry_part(entry, 0, kWindowScaleGroup, row);
      for (int i = 0; i < kWindowScaleGroup; ++i) {
        const auto got = static_cast<uint16_t>(row[i / 2] >> (16 * (i % 2)));
        ASSERT_EQ(got, mma::to_bf16(window_entry_value(entry, i)))
            << "byte " << int(entry[i]) << " at " << i << " scale " << scale;
      }
    }
  }
  EXPECT_NE(window_widening_multiplier(127), 0u);  // typical scales take the bit path
  EXPECT_EQ(window_widening_multiplier(2), 0u);
}

// Split-KV as FlashMLA's scheduler weighs it: V4.1's 640 keys a request are
// 10 blocks of 64; a split costs 5 more. On 132 SMs a lone request takes 10
// splits of one block (6 a CTA); 32 requests take 4 (128 CTAs of 3 + 5 blocks,
// one wave: 5 splits would need two); from 128 requests on, one CTA a request.
TEST(SparseDecode, SplitsWeighTheirPartialOutputsAgainstWaves) {
  // The kernel's split block is the kernel model's (FlashMLA's 64 keys).
  const CostParams priors =
      load_cost_params_file(std::string(V41SIM_SOURCE_DIR) + "/validation/calibration/defaults.yaml");
  EXPECT_EQ(kSplitBlockKeys, priors.of(KernelClass::kAttention).split_min);
  const auto splits = [](int64_t batch) { return sparse_decode_splits({batch, 64, 512, 1}, 132); };
  EXPECT_EQ(splits(1), 10);
  EXPECT_EQ(splits(8), 10);
  EXPECT_EQ(splits(32), 4);
  EXPECT_EQ(splits(64), 2);
  EXPECT_EQ(splits(128), 1);
  EXPECT_EQ(splits(1000), 1);
  EXPECT_EQ(sparse_decode_splits({1, 64, 16, 1}, 132), 3);  // a short key list: 144 keys, 3 blocks
}

// Both tensor-core kernels' lazy reference max: it stays while a tile's max
// is within ln 256 above it (O kept as it is, factor 1), moves past that (O
// rescaled by e^(old - new)), starts at the first valid key (O still empty)
// and stays at -inf, factor 1, while no key was valid.
TEST(SparseDecode, TheReferenceMaxMovesOnlyPastItsMargin) {
  const ReferenceMax stays = next_reference_max(2.0f, 2.0f + kRescaleMargin);
  EXPECT_EQ(stays.max, 2.0f);
  EXPECT_EQ(stays.correction, 1.0f);
  EXPECT_EQ(next_reference_max(2.0f, -1.0f).max, 2.0f);
  const ReferenceMax moves = next_reference_max(2.0f, 2.0f + kRescaleMargin + 0.5f);
  EXPECT_EQ(moves.max, 2.0f + kRescaleMargin + 0.5f);
  EXPECT_NEAR(moves.correction, std::exp(-kRescaleMargin - 0.5f), 1e-7);
  const ReferenceMax first = next_reference_max(-INFINITY, -3.0f);
  EXPECT_EQ(first.max, -3.0f);
  EXPECT_EQ(first.correction, 0.0f);
  const ReferenceMax none = next_reference_max(-INFINITY, -INFINITY);
  EXPECT_EQ(none.max, -INFINITY);
  EXPECT_EQ(none.correction, 1.0f);
  EXPECT_NEAR(std::exp(kRescaleMargin), 256.0f, 1e-3);
}

TEST(SparseDecodeCuda, MatchesTheReference) { expect_device_checks({"sparse_decode_fp32"}); }

TEST(SparseDecodeMmaCuda, MatchesTheReference) { expect_device_checks({"sparse_decode_tensor_cores"}); }

}  // namespace
}  // namespace v41sim::kernels

namespace v41sim::kernels {
namespace {

TEST(V41Shapes, TheHarnessShapesAreTheModelFiles) {
  const ModelAnalysis v41 = testing::analyze("deepseek_v4_1_flash");
  EXPECT_EQ(kV41Hidden, v41.spec.hidden_size);
  EXPECT_EQ(kV41ExpertWidth, v41.spec.moe->expert_intermediate);
  EXPECT_EQ(kV41QueryHeads, v41.spec.attention.num_heads);
  EXPECT_EQ(kV41IndexHeads, v41.spec.attention.indexer->heads);
  EXPECT_EQ(kV41TopK, v41.spec.attention.indexer->topk);
  EXPECT_EQ(kV41HeadDim, v41.spec.attention.head_dim);
  EXPECT_EQ(kV41QLoraRank, v41.spec.attention.q_lora_rank);
  EXPECT_EQ(kV41OutputGroups, v41.spec.attention.output_groups);
  EXPECT_EQ(kV41OutputLoraRank, v41.spec.attention.output_lora_rank);
  EXPECT_EQ(kV41IndexHeadDim, v41.spec.attention.indexer->head_dim);
  EXPECT_EQ(kV41RoutedExperts, v41.spec.moe->routed_experts);
  EXPECT_EQ(kV41Vocab, v41.spec.vocab_size);
  ASSERT_TRUE(v41.spec.attention.candidate_pool.has_value());
  EXPECT_EQ(kV41PoolBlockSize, v41.spec.attention.candidate_pool->block_size);
  EXPECT_EQ(kV41PoolTopBlocks, v41.spec.attention.candidate_pool->top_blocks);
  EXPECT_EQ(kLatentDim, v41.spec.attention.kv_heads * v41.spec.attention.head_dim);
}

}  // namespace
}  // namespace v41sim::kernels
