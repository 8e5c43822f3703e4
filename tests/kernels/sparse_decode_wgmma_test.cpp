// The BF16 wgmma sparse decode's logic on the CPU, CTA by CTA: the queries
// copied and each tile's keys widened by the kernel's own functions
// (sparse_decode_wgmma_tiles.h) into a poisoned image of its shared memory,
// each warpgroup's scores read through its descriptors as the hardware
// addresses a 128-byte swizzle (K-major), the partial scores exchanged
// through the image, each thread's softmax run with its quad's maxima and
// sums, and P.V read with P from the threads' registers (the A fragment's
// owners) and V through the N-major descriptor. It must reproduce the CPU
// reference, split and whole, with fewer than 64 heads, padding, a window
// and a partial last tile. What this cannot show: the hardware's own reading
// of the descriptors and the ordering of wgmma, barriers and stores (the
// device check does).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/attention/sparse_decode_reference.h"
#include "kernels/attention/sparse_decode_wgmma_tiles.h"
#include "kernels/common/compare.h"
#include "kernels/common/wgmma_layout.h"
#include "tests/kernels/device_check_support.h"
#include "tests/kernels/sparse_decode_replay.h"

namespace v41sim::kernels {
namespace {

using namespace sparse_decode_wgmma;
using testing::key_list;
using testing::Partial;
constexpr int kWarpgroupThreads = wgmma::kThreads;

float bf16_at(const std::vector<uint8_t>& smem, uint32_t address) {
  return bf16_value(static_cast<uint16_t>(smem[address] | (smem[address + 1] << 8)));
}

class CtaReplay {
 public:
  CtaReplay(const SparseDecodeInputs& in, int64_t b, int64_t begin, int64_t end)
      : in_(in), b_(b), end_(end), smem_(kSharedBytes, 0xEE) {
    copy_queries();
    widen_tile(begin, 0);
    int stage = 0;
    for (int64_t tile = begin; tile < end; tile += kKeys, stage ^= 1) {
      for (int w = 0; w < 2; ++w) scores(w, stage);
      exchange();
      for (int w = 0; w < 2; ++w) softmax(w, stage);
      for (int w = 0; w < 2; ++w) values(w, stage);
      if (tile + kKeys < end) widen_tile(tile + kKeys, stage ^ 1);
    }
  }

  Partial result() const {
    const int64_t heads = in_.shape.heads;
    Partial p{std::vector<float>(static_cast<std::size_t>(heads * kLatentDim), NAN),
              std::vector<float>(static_cast<std::size_t>(heads), NAN),
              std::vector<float>(static_cast<std::size_t>(heads), NAN)};
    for (int w = 0; w < 2; ++w) {
      for (int t = 0; t < kWarpgroupThreads; ++t) {
        for (int i = 0; i < kOutputs; ++i) {
          const int h = wgmma::accumulator_row(t, i);
          if (h < heads)
            p.o[static_cast<std::size_t>(h * kLatentDim + w * kHalfDims + wgmma::accumulator_col(t, i))] =
                o_[w][t][i];
        }
        for (int r = 0; r < 2; ++r) {
          const int h = wgmma::accumulator_row(t, 2 * r);
          if (w == 0 && t % 4 == 0 && h < heads) {
            p.m[static_cast<std::size_t>(h)] = rows_[w][t].m[r];
            p.l[static_cast<std::size_t>(h)] = rows_[w][t].l[r];
          }
        }
      }
    }
    return p;
  }

  // Both warpgroups ran the same softmax on the same scores.
  bool warpgroups_agree() const {
    for (int t = 0; t < kWarpgroupThreads; ++t) {
      for (int r = 0; r < 2; ++r) {
        if (float_bits(rows_[0][t].m[r]) != float_bits(rows_[1][t].m[r]) ||
            float_bits(rows_[0][t].l[r]) != float_bits(rows_[1][t].l[r]))
          return false;
      }
    }
    return true;
  }

  // How often a row's O was rescaled after its first keys (its reference max moved).
  int rescales() const { return rescales_; }

 private:
  void copy_queries() {
    const auto* q = reinterpret_cast<const uint8_t*>(in_.q.data() + b_ * in_.shape.heads * kLatentDim);
    for (int w = 0; w < 2; ++w) {
      for (int c = 0; c < kQueryChunks; ++c) {
        const QueryChunk chunk = query_chunk(c, w, in_.shape.heads);
        for (int byte = 0; byte < 16; ++byte)
          smem_[static_cast<std::size_t>(chunk.smem + byte)] = chunk.valid ? q[chunk.element * 2 + byte] : 0;
      }
    }
  }

  void widen_tile(int64_t first_slot, int stage) {
    for (int w = 0; w < 2; ++w) {
      for (int t = 0; t < kWarpgroupThreads; ++t) {
        const KeyShare share = key_share(w, t);
        const KeyEntry key = find_key(key_list(in_), b_, first_slot + share.key, end_);
        MainShare main{};
        if (key.kind == KeyKind::kMain) {
          for (int c = 0; c < kShareChunks; ++c)
            main.codes[c] = load_word(key.entry + main_codes_offset(share) + 4 * c);
          for (int s = 0; s < 2; ++s)
            main.scales[s] = load_word(key.entry + main_scales_offset(share) + 4 * s);
        }
        for (int g = 0; g < kShareSixteens; ++g) {
          uint32_t out[8];
          widen_share_sixteen(key.kind, main, key.entry, share, g, out);
          for (int half = 0; half < 2; ++half) {
            std::memcpy(
                &smem_[static_cast<std::size_t>(
                    stage_offset(stage) + operand_offset(share.key, share.first_dim + 16 * g + 8 * half))],
                out + 4 * half, 16);
          }
        }
        if (t % 2 == 0)
          smem_[static_cast<std::size_t>(valid_offset(w, stage) + share.key)] = key.kind != KeyKind::kNone;
      }
    }
  }

  // Warpgroup w's partial scores: 16 steps, both operands through their descriptors.
  void scores(int w, int stage) {
    static float d[kHeads][kKeys];
    std::memset(d, 0, sizeof d);
    for (int step = 0; step < kScoreSteps; ++step) {
      const uint64_t a = query_descriptor(0, w, step), b = key_descriptor(0, stage, w, step);
      for (int row = 0; row < kHeads; ++row) {
        for (int col = 0; col < kKeys; ++col) {
          for (int k = 0; k < kStepK; ++k)
            d[row][col] += bf16_at(smem_, wgmma::read_address(a, row, 2 * k)) *
                           bf16_at(smem_, wgmma::read_address(b, col, 2 * k));
        }
      }
    }
    for (int t = 0; t < kWarpgroupThreads; ++t) {
      for (int i = 0; i < kScores; ++i)
        s_[w][t][i] = d[wgmma::accumulator_row(t, i)][wgmma::accumulator_col(t, i)];
    }
  }

  void exchange() {
    for (int w = 0; w < 2; ++w) {
      for (int t = 0; t < kWarpgroupThreads; ++t) {
        for (int i = 0; i < kScores; ++i)
          std::memcpy(&smem_[static_cast<std::size_t>(exchange_offset(w, t, i))], &s_[w][t][i],
                      sizeof(float));
      }
    }
    for (int w = 0; w < 2; ++w) {
      for (int t = 0; t < kWarpgroupThreads; ++t) {
        for (int i = 0; i < kScores; ++i) {
          float other = 0;
          std::memcpy(&other, &smem_[static_cast<std::size_t>(exchange_offset(1 - w, t, i))], sizeof other);
          s_[w][t][i] += other;
        }
      }
    }
  }

  // Each thread's softmax, its quad's maxima and sums as the shuffles give them.
  void softmax(int w, int stage) {
    float maxima[kWarpgroupThreads][2];
    for (int t = 0; t < kWarpgroupThreads; ++t) {
      scale_and_mask(s_[w][t], &smem_[static_cast<std::size_t>(valid_offset(w, stage))], t,
                     1.0f / std::sqrt(static_cast<float>(kLatentDim)));
      thread_row_maxima(s_[w][t], maxima[t]);
    }
    static SoftmaxStep steps[kWarpgroupThreads];
    for (int t = 0; t < kWarpgroupThreads; ++t) {
      const int quad = t - t % 4;
      float quad_maxima[2];
      for (int r = 0; r < 2; ++r)
        quad_maxima[r] =
            std::max({maxima[quad][r], maxima[quad + 1][r], maxima[quad + 2][r], maxima[quad + 3][r]});
      steps[t] = softmax_step(s_[w][t], quad_maxima, rows_[w][t]);
      for (int r = 0; r < 2; ++r)  // O rescaled after a row's first keys: its reference max moved
        rescales_ += std::isfinite(rows_[w][t].m[r]) && steps[t].correction[r] != 1.0f;
    }
    for (int t = 0; t < kWarpgroupThreads; ++t) {
      float sums[2];
      for (int r = 0; r < 2; ++r) {  // the shuffles' order: (t ^ 1) first, then (t ^ 2)
        const float pair = steps[t].sums[r] + steps[t ^ 1].sums[r];
        const float other = steps[(t ^ 2)].sums[r] + steps[(t ^ 2) ^ 1].sums[r];
        sums[r] = pair + other;
      }
      update_rows(rows_[w][t], steps[t], sums);
      std::memcpy(p_[w][t], steps[t].p, sizeof steps[t].p);
      for (int i = 0; i < kOutputs; ++i) o_[w][t][i] *= steps[t].correction[(i % 4) / 2];
    }
  }

  // O += P.V: P gathered from the threads' registers as the wgmma reads its
  // A fragment, V through the N-major descriptor.
  void values(int w, int stage) {
    static float p[kHeads][kKeys];
    for (int row = 0; row < kHeads; ++row) {
      for (int key = 0; key < kKeys; ++key) {
        const wgmma::FragmentSlot slot = wgmma::a_fragment_slot(row, key % kStepK);
        const uint32_t word = p_[w][slot.thread][4 * (key / kStepK) + slot.reg];
        p[row][key] = bf16_value(static_cast<uint16_t>(word >> (16 * slot.half)));
      }
    }
    static float v[kKeys][kHalfDims];
    for (int step = 0; step < kValueSteps; ++step) {
      const uint64_t desc = value_descriptor(0, stage, w, step);
      for (int k = 0; k < kStepK; ++k) {
        for (int n = 0; n < kHalfDims; ++n)
          v[step * kStepK + k][n] = bf16_at(smem_, wgmma::read_address_mn_major(desc, n, k));
      }
    }
    for (int t = 0; t < kWarpgroupThreads; ++t) {
      for (int i = 0; i < kOutputs; ++i) {
        const int row = wgmma::accumulator_row(t, i), n = wgmma::accumulator_col(t, i);
        float acc = 0;
        for (int key = 0; key < kKeys; ++key) acc += p[row][key] * v[key][n];
        o_[w][t][i] += acc;
      }
    }
  }

  const SparseDecodeInputs& in_;
  int64_t b_, end_;
  std::vector<uint8_t> smem_;
  float s_[2][kWarpgroupThreads][kScores] = {};
  uint32_t p_[2][kWarpgroupThreads][kValueSteps * 4] = {};
  float o_[2][kWarpgroupThreads][kOutputs] = {};
  RowStates rows_[2][kWarpgroupThreads];
  int rescales_ = 0;
};

// Every request's splits replayed CTA by CTA, finished or merged as the kernels do.
std::vector<float> replay(const SparseDecodeInputs& in, int splits, int* rescales = nullptr) {
  return testing::replay_splits(in, splits, [&](int64_t b, int64_t begin, int64_t end) {
    auto cta = std::make_unique<CtaReplay>(in, b, begin, end);
    EXPECT_TRUE(cta->warpgroups_agree()) << "request " << b << " slots from " << begin;
    if (rescales != nullptr) *rescales += cta->rescales();
    return cta->result();
  });
}

TEST(SparseDecodeWgmma, CtasReproduceTheReference) { testing::expect_ctas_reproduce_the_reference(replay); }

// O rescaled only where a row's reference max moved: counted by every thread
// of a row's quad in both warpgroups, so head 0's two rows of warpgroup 0 at
// least, past the first tile in each request, count more than 2 x 2.
TEST(SparseDecodeWgmma, LazyRescalingMovesTheMaxOnlyPastItsMargin) {
  testing::expect_lazy_rescaling(replay, 2 * 2);
}

TEST(SparseDecodeWgmma, ARequestWithNoKeysGivesZeros) { testing::expect_no_keys_give_zeros(replay); }

// The scores' descriptors read each key's and each head's dims as the
// widening and the query copies place them; the P.V descriptor reads the
// same key tile N-major: value (dim n, key k) where the key's widened dim lies.
TEST(SparseDecodeWgmma, DescriptorsReadTheTilesBothWays) {
  for (int stage = 0; stage < kStages; ++stage) {
    for (int w = 0; w < 2; ++w) {
      for (int step = 0; step < kScoreSteps; ++step) {
        for (int row = 0; row < kKeys; ++row) {
          for (int k = 0; k < kStepK; ++k) {
            const int dim = w * kHalfDims + step * kStepK + k;
            ASSERT_EQ(wgmma::read_address(key_descriptor(0, stage, w, step), row, 2 * k),
                      static_cast<uint32_t>(stage_offset(stage) + operand_offset(row, dim)));
            ASSERT_EQ(wgmma::read_address(query_descriptor(0, w, step), row, 2 * k),
                      static_cast<uint32_t>(kQueryOffset + operand_offset(row, dim)));
          }
        }
      }
      for (int step = 0; step < kValueSteps; ++step) {
        for (int k = 0; k < kStepK; ++k) {
          for (int n = 0; n < kHalfDims; ++n) {
            ASSERT_EQ(wgmma::read_address_mn_major(value_descriptor(0, stage, w, step), n, k),
                      static_cast<uint32_t>(stage_offset(stage) +
                                            operand_offset(step * kStepK + k, w * kHalfDims + n)))
                << "stage " << stage << " warpgroup " << w << " step " << step << " k " << k << " n " << n;
          }
        }
      }
    }
  }
}

// The P fragment a thread hands to P.V holds exactly its own score
// accumulators: each word's two values are where the A fragment's owner map
// says that thread's register holds them.
TEST(SparseDecodeWgmma, WeightsStayInTheThreadsThatScoredThem) {
  for (int t = 0; t < kWarpgroupThreads; ++t) {
    for (int q = 0; q < kValueSteps * 4; ++q) {
      const int i = 4 * (2 * (q / 4) + (q % 4) / 2) + 2 * (q % 2);
      for (int half = 0; half < 2; ++half) {
        const int row = wgmma::accumulator_row(t, i + half), key = wgmma::accumulator_col(t, i + half);
        ASSERT_EQ(key / kStepK, q / 4);
        const wgmma::FragmentSlot slot = wgmma::a_fragment_slot(row, key % kStepK);
        EXPECT_EQ(slot.thread, t);
        EXPECT_EQ(slot.reg, q % 4);
        EXPECT_EQ(slot.half, half);
      }
    }
  }
}

// Each warpgroup's query copies fill its half of Q once; the key shares
// cover every (key, dim) of a tile once over both warpgroups.
TEST(SparseDecodeWgmma, CopiesAndSharesCoverTheOperandsOnce) {
  std::vector<int> q_cover(kOperandBytes, 0), k_cover(kOperandBytes, 0);
  for (int w = 0; w < 2; ++w) {
    for (int c = 0; c < kQueryChunks; ++c) {
      const QueryChunk chunk = query_chunk(c, w, 64);
      for (int byte = 0; byte < 16; ++byte)
        ++q_cover[static_cast<std::size_t>(chunk.smem - kQueryOffset + byte)];
    }
    for (int t = 0; t < kWarpgroupThreads; ++t) {
      const KeyShare share = key_share(w, t);
      for (int c = 0; c < kShareChunks; ++c) {
        for (int byte = 0; byte < 16; ++byte)
          ++k_cover[static_cast<std::size_t>(operand_offset(share.key, share.first_dim + 8 * c) + byte)];
      }
    }
  }
  for (std::size_t i = 0; i < q_cover.size(); ++i) {
    ASSERT_EQ(q_cover[i], 1) << "query byte " << i;
    ASSERT_EQ(k_cover[i], 1) << "key byte " << i;
  }
  EXPECT_EQ(kStagesOffset % wgmma::kAtomBytes, 0);
  // The partial scores: every (warpgroup, thread, score) a word of its own,
  // each group of 4 one aligned 16-byte store.
  std::vector<int> x_cover(2 * kExchangeBytes, 0);
  for (int w = 0; w < 2; ++w) {
    for (int t = 0; t < kWarpgroupThreads; ++t) {
      for (int i = 0; i < kScores; ++i) {
        const int offset = exchange_offset(w, t, i);
        ++x_cover[static_cast<std::size_t>(offset - kExchangeOffset)];
        if (i % 4 == 0) {
          ASSERT_EQ(offset % 16, 0);
        } else {
          ASSERT_EQ(offset, exchange_offset(w, t, i - 1) + 4);
        }
      }
    }
  }
  for (std::size_t i = 0; i < x_cover.size(); i += 4) ASSERT_EQ(x_cover[i], 1) << "exchange byte " << i;
}

// A failed check's diagnosis for attention: outputs within 2% of the
// largest are not counted; one head's second 64-dim block off shows as one
// row of 16 and 64 columns of 128.
TEST(SparseDecodeWgmma, AFailedCheckSaysWhereTheOutputsDiffer) {
  const int64_t requests = 2, heads = 64;
  std::vector<float> want(static_cast<std::size_t>(requests * heads * kLatentDim));
  for (std::size_t i = 0; i < want.size(); ++i) want[i] = static_cast<float>(i % 89) / 88.0f - 0.5f;
  std::vector<float> got = want;
  for (float& v : got) v += 0.005f;  // rounding: 1% of the largest
  for (int dim = 64; dim < 128; ++dim) got[static_cast<std::size_t>((heads + 3) * kLatentDim + dim)] += 0.25f;
  const std::string said = where_outputs_differ(got, want, heads, kLatentDim, "request", 2e-2);
  EXPECT_NE(said.find("64 of 65536 outputs off, the first request 1 row 3 column 64"), std::string::npos)
      << said;
  EXPECT_NE(said.find("rows mod 16 off: 1 of 16, columns mod 128 off: 64 of 128"), std::string::npos) << said;
}

// The A fragment's owner map and its inverse (which the layout probe loads
// its registers by) agree, every (row, k) held once.
TEST(WgmmaLayout, AFragmentSlotsAndValuesAreInverse) {
  std::vector<int> held(static_cast<std::size_t>(wgmma::kM * kStepK), 0);
  for (int t = 0; t < kWarpgroupThreads; ++t) {
    for (int reg = 0; reg < 4; ++reg) {
      for (int half = 0; half < 2; ++half) {
        const int row = wgmma::a_fragment_row(t, reg), k = wgmma::a_fragment_k(t, reg, half);
        ++held[static_cast<std::size_t>(row * kStepK + k)];
        const wgmma::FragmentSlot slot = wgmma::a_fragment_slot(row, k);
        ASSERT_EQ(slot.thread, t);
        ASSERT_EQ(slot.reg, reg);
        ASSERT_EQ(slot.half, half);
      }
    }
  }
  for (int n : held) EXPECT_EQ(n, 1);
}

// One wgmma of each kind our kernels issue reads the operands as modelled
// (on an sm_90 device; the detail says which reading differs, and how).
TEST(WgmmaLayoutCuda, TheDeviceReadsAsModelled) { expect_sm90a_device_checks({"wgmma_layouts"}); }

TEST(SparseDecodeWgmmaCuda, MatchesTheReference) { expect_sm90a_device_checks({"sparse_decode_wgmma"}); }

}  // namespace
}  // namespace v41sim::kernels
