// DraftAcceptance: how many of the drafts a decode step verifies one
// sequence's draw accepts (speculative decoding).
//
// Each draft is right with probability p given the ones before it, so the run
// of right ones has P(run >= j) = p^j, and a draw u in (0, 1] gives the run
// floor(log(u) / log(p)). A serving run draws once a sequence a step, and that
// logarithm was some 7% of the report's time. As the expression only falls as u
// grows, the largest u whose run reaches j is one number for each j: those
// are found once, by bisection over the doubles in (0, 1] with the expression
// itself, and a draw is compared with them, which gives the run the
// expression gives for every u (tests/unit/draft_acceptance_test.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace v41sim {

class DraftAcceptance {
 public:
  DraftAcceptance() = default;  // no draft: nothing is accepted
  // `acceptance`: p; `most_drafts`: the most drafts a step verifies (the
  // draft's block size) for which the thresholds are kept.
  DraftAcceptance(double acceptance, int64_t most_drafts);

  // The drafts of `drafts` that a draw `at_most_one` in (0, 1] accepts.
  int64_t accepted(double at_most_one, int64_t drafts) const;

 private:
  // floor(log(u) / log(p)) itself, for u in (0, 1].
  int64_t run_of(double at_most_one) const;

  double log_acceptance_ = 0;  // 0: nothing is accepted
  // reaches_[j - 1]: the largest draw whose run is at least j (0: none is).
  std::vector<double> reaches_;
};

}  // namespace v41sim
