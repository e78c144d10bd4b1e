// A checkpoint's pause on all-reduce's ring (docs/durability.md): every
// worker must pause after the same step, with no chunk in flight, or a
// worker a step ahead would wait for one that paused. The first worker
// asked, after step s, proposes s + 2 (no worker has finished s + 1 then:
// that needs this one's part), and its chunks of step s + 1 carry the
// proposal round the ring (ring_chunk_msg::pause_at). A worker asked later
// either knows it by then (it finished s + 1) or proposes at most s + 2,
// which reaches everyone within the same step; so by the end of step s + 1
// every worker knows the largest proposal and pauses after it. A worker
// that learns it from the ring before its own pause request waits there
// before its next step's computation. No actors here.

#pragma once

#include <cstdint>
#include <functional>
#include <utility>

namespace troupe::algos {

class ring_pause {
public:
  /// The step after which every worker pauses, as far as this one knows (0:
  /// no pause under way): what its chunks carry.
  std::uint64_t at() const noexcept {
    return at_;
  }

  /// This worker was asked to pause, `done` steps done: whether it pauses
  /// now (proposing done + 2 if it knows of no pause yet).
  bool here(std::uint64_t done) noexcept {
    if (at_ == 0)
      at_ = done + 2;
    return done >= at_;
  }

  /// A ring mate's chunk says `at`: the largest known is kept (one at or
  /// before `done` is a past pause's).
  void heard(std::uint64_t at, std::uint64_t done) noexcept {
    if (at > at_ && at > done)
      at_ = at;
  }

  /// Before a step's computation, `done` steps done: true (and `ready`
  /// kept) if the worker must wait here for its own pause request.
  bool hold(std::uint64_t done, std::function<void()>& ready) {
    if (at_ == 0 || done < at_)
      return false;
    held_ = std::move(ready);
    return true;
  }

  /// The worker paused, or the checkpoint was given up: the step's rest
  /// held goes on (a paused worker's core keeps it until the resume), and
  /// the next pause agrees anew.
  void paused() {
    at_ = 0;
    if (held_) {
      auto ready = std::move(held_);
      held_ = nullptr;
      ready();
    }
  }

private:
  std::uint64_t at_ = 0;
  std::function<void()> held_;
};

} // namespace troupe::algos
