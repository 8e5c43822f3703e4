// A warp's lanes on the CPU: each lane a thread running the same host-and-
// device function, the lanes meeting at every exchange as a warp's lanes do
// at a shuffle or a match (each posts its value, all meet, each reads the
// lane it asks for or finds the lanes that match it, all meet again). So the
// code a kernel runs with __shfl_sync, __shfl_up_sync or __match_any_sync
// runs here as written, every lane making every call. A lane that ends
// leaves the meetings, so code where lanes make different numbers of calls
// (a bug on a GPU) gives wrong values here, not a hung test.
#pragma once

#include <barrier>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace v41sim::kernels::testing {

template <typename T>
class LockstepLanes {
 public:
  explicit LockstepLanes(int lanes) : posted_(static_cast<std::size_t>(lanes)), meet_(lanes) {}

  // body(lane) on `lanes` threads at once; returns when all are done. Once an object.
  template <typename Body>
  void run(Body&& body) {
    std::vector<std::thread> threads;
    for (int lane = 0; lane < static_cast<int>(posted_.size()); ++lane) {
      threads.emplace_back([this, &body, lane] {
        body(lane);
        meet_.arrive_and_drop();
      });
    }
    for (std::thread& t : threads) t.join();
  }

  // What lane `from` passed to the same exchange (__shfl_sync).
  T exchange(int lane, T value, int from) {
    posted_[static_cast<std::size_t>(lane)] = value;
    meet_.arrive_and_wait();
    const T got = posted_[static_cast<std::size_t>(from)];
    meet_.arrive_and_wait();
    return got;
  }

  // The lanes that passed the same value as this lane, lane l as bit l (__match_any_sync).
  uint32_t match_any(int lane, T value) {
    posted_[static_cast<std::size_t>(lane)] = value;
    meet_.arrive_and_wait();
    uint32_t lanes = 0;
    for (std::size_t l = 0; l < posted_.size(); ++l) {
      if (posted_[l] == value) lanes |= 1u << l;
    }
    meet_.arrive_and_wait();
    return lanes;
  }

  // What lane - delta passed, or the lane's own value below it (__shfl_up_sync).
  T exchange_up(int lane, T value, int delta) {
    return exchange(lane, value, lane >= delta ? lane - delta : lane);
  }

 private:
  std::vector<T> posted_;
  std::barrier<> meet_;
};

}  // namespace v41sim::kernels::testing
