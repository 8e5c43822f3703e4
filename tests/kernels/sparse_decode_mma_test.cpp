// The BF16 mma.sync sparse decode's logic on the CPU, CTA by CTA: each
// tile's entries staged as stored and widened by the kernel's own functions
// (sparse_decode_mma_tiles.h) into poisoned images of its shared memory,
// each warp's scores and its block of O taken through the fragment loads it
// issues (mma_fragments.h) on an emulated mma.m16n8k16, each head's softmax
// run by its four threads with the maxima and sums their shuffles combine,
// and the output finished by the CTA where it holds a request's whole key
// list. It must reproduce the CPU reference, whole and split, with fewer
// than 64 heads, padding, a window and a partial last tile. What this
// cannot show: the ordering of cp.async, barriers and stores (the device
// check does).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/attention/sparse_decode_mma_tiles.h"
#include "kernels/attention/sparse_decode_reference.h"
#include "kernels/common/compare.h"
#include "tests/kernels/mma_bf16_emulation.h"
#include "tests/kernels/sparse_decode_replay.h"

namespace v41sim::kernels {
namespace {

using namespace sparse_decode_mma;
using testing::key_list;
using testing::Partial;

using testing::kLanes;
using testing::kPoisonBf16;

class MmaCtaReplay {
 public:
  MmaCtaReplay(const SparseDecodeInputs& in, int64_t b, int64_t begin, int64_t end)
      : in_(in),
        b_(b),
        end_(end),
        q_(kHeads * kRowStride, kPoisonBf16),
        k_(kTile * kRowStride, kPoisonBf16),
        s_(kHeads * kScoreStride, NAN),
        p_(kHeads * kProbStride, kPoisonBf16),
        raw_(kTile * kRawStride),
        o_(std::make_unique<Accumulators[]>(kWarps)) {  // O starts at zero
    for (int h = 0; h < kHeads; ++h) {                  // no reference max yet, no weight
      m_[h] = -INFINITY;
      l_[h] = 0.0f;
      correction_[h] = 1.0f;
    }
    copy_queries();
    for (int64_t tile = begin; tile < end; tile += kTile) {
      stage_tile(tile);
      widen_tile();
      for (int warp = 0; warp < kWarps; ++warp) scores(warp);
      softmax();
      for (int warp = 0; warp < kWarps; ++warp) accumulate(warp);
    }
  }

  // The split's result: O unnormalised (each lane's accumulators where
  // c_row and c_col place them), each head's reference max and sum.
  Partial result() const {
    const int64_t heads = in_.shape.heads;
    Partial p{std::vector<float>(static_cast<std::size_t>(heads * kLatentDim), NAN),
              std::vector<float>(m_, m_ + heads), std::vector<float>(l_, l_ + heads)};
    for (int warp = 0; warp < kWarps; ++warp) {
      const WarpBlocks blocks = warp_blocks(warp);
      for (int t = 0; t < kOutputTiles; ++t) {
        for (int lane = 0; lane < kLanes; ++lane) {
          for (int i = 0; i < 4; ++i) {
            const int h = blocks.head0 + mma::c_row(mma::lane_of(lane), i);
            const int dim = blocks.dim0 + t * mma::kN + mma::c_col(mma::lane_of(lane), i);
            if (h < heads) p.o[static_cast<std::size_t>(h * kLatentDim + dim)] = o_[warp][t][lane][i];
          }
        }
      }
    }
    return p;
  }

  // How often a head's O was rescaled after its first keys (its reference max moved).
  int rescales() const { return rescales_; }

 private:
  using Accumulators = float[kOutputTiles][kLanes][4];  // a warp's O: n-tile, lane, register

  void copy_queries() {
    for (int h = 0; h < kHeads; ++h) {
      for (int c = 0; c < kLatentDim; ++c)
        q_[static_cast<std::size_t>(h * kRowStride + c)] =
            h < in_.shape.heads ? in_.q[static_cast<std::size_t>((b_ * in_.shape.heads + h) * kLatentDim + c)]
                                : uint16_t{0};
    }
  }

  // Each thread's chunks of its key's entry, copied as stored; the rest of the image poisoned.
  void stage_tile(int64_t tile) {
    std::fill(raw_.begin(), raw_.end(), uint8_t{0xEE});
    for (int thread = 0; thread < kThreads; ++thread) {
      const KeyPart mine = key_part(thread);
      const KeyEntry key = find_key(key_list(in_), b_, tile + mine.key, end_);
      if (mine.part == 0) kind_[mine.key] = key.kind;
      if (key.kind == KeyKind::kNone) continue;
      const int chunks = (key.kind == KeyKind::kMain ? kMainEntryBytes : kWindowEntryBytes) / kChunk;
      for (int chunk = mine.part; chunk < chunks; chunk += kKeyParts)
        std::memcpy(&raw_[static_cast<std::size_t>(mine.key * kRawStride + chunk * kChunk)],
                    key.entry + chunk * kChunk, kChunk);
    }
  }

  void widen_tile() {
    for (int thread = 0; thread < kThreads; ++thread) {
      const KeyPart mine = key_part(thread);
      uint32_t words[kDimsPerPart / 2];
      widen_key_part(kind_[mine.key], &raw_[static_cast<std::size_t>(mine.key * kRawStride)], mine.part,
                     words);
      std::memcpy(&k_[static_cast<std::size_t>(mine.key * kRowStride + mine.part * kDimsPerPart)], words,
                  sizeof words);
      if (mine.part == 0) valid_[mine.key] = kind_[mine.key] != KeyKind::kNone;
    }
  }

  // The warp's 16 heads x 32 keys of S, over the 512 dims.
  void scores(int warp) {
    const WarpBlocks blocks = warp_blocks(warp);
    float acc[kScoreTiles][kLanes][4] = {};
    for (int k0 = 0; k0 < kLatentDim; k0 += mma::kK) {
      for (int t = 0; t < kScoreTiles; ++t) {
        testing::emulate_warp_mma(
            acc[t],
            [&](mma::Lane l, int r) { return mma::load_a(q_.data(), kRowStride, blocks.head0, k0, l, r); },
            [&](mma::Lane l, int r) {
              return mma::load_b_n_major(k_.data(), kRowStride, blocks.key0 + t * mma::kN, k0, l, r);
            });
      }
    }
    const float scale = 1.0f / std::sqrt(static_cast<float>(kLatentDim));
    for (int t = 0; t < kScoreTiles; ++t) {
      for (int lane = 0; lane < kLanes; ++lane) {
        for (int i = 0; i < 4; ++i) {
          const int row = blocks.head0 + mma::c_row(mma::lane_of(lane), i);
          const int col = blocks.key0 + t * mma::kN + mma::c_col(mma::lane_of(lane), i);
          s_[static_cast<std::size_t>(row * kScoreStride + col)] =
              masked_score(acc[t][lane][i], valid_[col], scale);
        }
      }
    }
  }

  // Each head's four threads: their maxima and sums combined as the shuffles
  // do (xor 1, then xor 2), the state written by the first of them.
  void softmax() {
    for (int h = 0; h < kHeads; ++h) {
      const float* row = &s_[static_cast<std::size_t>(h * kScoreStride)];
      float maxima[kHeadParts], sums[kHeadParts];
      for (int j = 0; j < kHeadParts; ++j) maxima[j] = part_max(row, head_part(h * kHeadParts + j));
      const float tile_max = std::fmax(std::fmax(maxima[0], maxima[1]), std::fmax(maxima[2], maxima[3]));
      const HeadState old{m_[h], l_[h]};
      const ReferenceMax reference = next_reference_max(old.m, tile_max);
      for (int j = 0; j < kHeadParts; ++j) {
        const HeadPart mine = head_part(h * kHeadParts + j);
        EXPECT_EQ(mine.head, h);
        sums[j] = weigh_part(row, mine, reference.max, &p_[static_cast<std::size_t>(h * kProbStride)]);
      }
      const HeadState next = next_head_state(old, reference, (sums[0] + sums[1]) + (sums[2] + sums[3]));
      rescales_ += std::isfinite(old.m) && reference.correction != 1.0f;
      correction_[h] = reference.correction;
      m_[h] = next.m;
      l_[h] = next.l;
    }
  }

  // O = O * correction + P.V for the warp's 16 heads x 256 dims.
  void accumulate(int warp) {
    const WarpBlocks blocks = warp_blocks(warp);
    Accumulators& o = o_[warp];
    for (int lane = 0; lane < kLanes; ++lane) {
      for (int i = 0; i < 4; ++i) {
        const float factor = correction_[blocks.head0 + mma::c_row(mma::lane_of(lane), i)];
        for (int t = 0; t < kOutputTiles; ++t) o[t][lane][i] *= factor;
      }
    }
    for (int k0 = 0; k0 < kTile; k0 += mma::kK) {
      for (int t = 0; t < kOutputTiles; ++t) {
        testing::emulate_warp_mma(
            o[t],
            [&](mma::Lane l, int r) { return mma::load_a(p_.data(), kProbStride, blocks.head0, k0, l, r); },
            [&](mma::Lane l, int r) {
              return mma::load_b_k_major(k_.data(), kRowStride, k0, blocks.dim0 + t * mma::kN, l, r);
            });
      }
    }
  }

  const SparseDecodeInputs& in_;
  int64_t b_, end_;
  std::vector<uint16_t> q_, k_;
  std::vector<float> s_;
  std::vector<uint16_t> p_;
  std::vector<uint8_t> raw_;
  KeyKind kind_[kTile] = {};
  bool valid_[kTile] = {};
  float m_[kHeads], l_[kHeads], correction_[kHeads];
  std::unique_ptr<Accumulators[]> o_;
  int rescales_ = 0;
};

// Every request's splits replayed CTA by CTA, finished or merged as the kernels do.
std::vector<float> replay(const SparseDecodeInputs& in, int splits, int* rescales = nullptr) {
  return testing::replay_splits(in, splits, [&](int64_t b, int64_t begin, int64_t end) {
    const auto cta = std::make_unique<MmaCtaReplay>(in, b, begin, end);
    if (rescales != nullptr) *rescales += cta->rescales();
    return cta->result();
  });
}

TEST(SparseDecodeMma, CtasReproduceTheReference) { testing::expect_ctas_reproduce_the_reference(replay); }

// O rescaled only where a head's reference max moved, counted once a head:
// head 0 at least, past its first tile in each request, counts more than 2.
TEST(SparseDecodeMma, LazyRescalingMovesTheMaxOnlyPastItsMargin) {
  testing::expect_lazy_rescaling(replay, 2);
}

TEST(SparseDecodeMma, ARequestWithNoKeysGivesZeros) { testing::expect_no_keys_give_zeros(replay); }

// The CTA's maps cover their work once: the threads' chunk copies every
// byte of either entry kind, their widened parts every (key, dim) of the
// tile; the warps' blocks every score and every output; the softmax's
// threads every (head, key).
TEST(SparseDecodeMma, ThreadsAndWarpsCoverTheTileOnce) {
  for (const int entry_bytes : {kMainEntryBytes, kWindowEntryBytes}) {
    std::vector<int> copied(static_cast<std::size_t>(kTile * entry_bytes), 0);
    for (int thread = 0; thread < kThreads; ++thread) {
      const KeyPart mine = key_part(thread);
      for (int chunk = mine.part; chunk < entry_bytes / kChunk; chunk += kKeyParts) {
        for (int byte = 0; byte < kChunk; ++byte)
          ++copied[static_cast<std::size_t>(mine.key * entry_bytes + chunk * kChunk + byte)];
      }
    }
    for (std::size_t i = 0; i < copied.size(); ++i)
      ASSERT_EQ(copied[i], 1) << entry_bytes << "-byte entries, byte " << i;
  }
  std::vector<int> widened(kTile * kLatentDim, 0), scored(kHeads * kTile, 0), output(kHeads * kLatentDim, 0),
      weighed(kHeads * kTile, 0);
  for (int thread = 0; thread < kThreads; ++thread) {
    const KeyPart mine = key_part(thread);
    for (int dim = 0; dim < kDimsPerPart; ++dim)
      ++widened[static_cast<std::size_t>(mine.key * kLatentDim + mine.part * kDimsPerPart + dim)];
    const HeadPart part = head_part(thread);
    for (int key = 0; key < kKeysPerHeadPart; ++key)
      ++weighed[static_cast<std::size_t>(part.head * kTile + part.first_key + key)];
  }
  for (int warp = 0; warp < kWarps; ++warp) {
    const WarpBlocks blocks = warp_blocks(warp);
    for (int h = 0; h < mma::kM; ++h) {
      for (int key = 0; key < kScoreTiles * mma::kN; ++key)
        ++scored[static_cast<std::size_t>((blocks.head0 + h) * kTile + blocks.key0 + key)];
      for (int dim = 0; dim < kOutputTiles * mma::kN; ++dim)
        ++output[static_cast<std::size_t>((blocks.head0 + h) * kLatentDim + blocks.dim0 + dim)];
    }
  }
  for (const auto* cover : {&widened, &scored, &output, &weighed}) {
    for (std::size_t i = 0; i < cover->size(); ++i) ASSERT_EQ((*cover)[i], 1) << i;
  }
  for (int thread = 0; thread < kThreads; thread += kHeadParts)  // a head's threads: one quad of a warp
    EXPECT_EQ(head_part(thread).head, head_part(thread + kHeadParts - 1).head);
}

}  // namespace
}  // namespace v41sim::kernels
