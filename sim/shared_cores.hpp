#pragma once

// A host's cores shared fairly (processor sharing): every task that is on the
// host progresses at min(1, cores / tasks) of a core's speed, as runnable
// threads do under the kernel's fair scheduler when their work is long next
// to its time slices. A task is a piece of work in nanoseconds of one core;
// its owner asks to hear when it reaches given amounts of work done (its
// marks: a handler's sends after part of its compute) and its end. When a
// task ends is known only once the tasks sharing the cores with it are.

#include <cstdint>
#include <vector>

#include "sim/link_model.hpp"

namespace troupe::sim {

class shared_cores {
public:
  using task_id = std::uint64_t;

  /// A mark a task reached: `at_work` nanoseconds of its work done (its
  /// whole work when `last`).
  struct reached {
    task_id task;
    nanos at_work;
    bool last;
  };

  explicit shared_cores(std::uint32_t cores = 1);

  /// Adds a task of `work` ns (> 0) at `now`, which must not be before the
  /// last call's time. `marks`: work done at which to hear of it, in (0,
  /// work), ascending; the end is always heard of.
  task_id add(nanos now, nanos work, std::vector<nanos> marks = {});
  /// Takes a task off the cores (its owner is gone) at `now`.
  void remove(nanos now, task_id id);
  /// The next instant at which a task reaches a mark (max: none).
  nanos next() const noexcept;
  /// Moves to `t` (at most next()) and appends what was reached to `out`,
  /// task by task in the order they were added, each task's marks in order;
  /// ended tasks leave.
  void advance(nanos t, std::vector<reached>& out);
  std::size_t tasks() const noexcept {
    return tasks_.size();
  }
  /// A core's work each task gets per nanosecond now.
  double rate() const noexcept;
  /// Summed over ended tasks: their time on the host beyond their work.
  std::uint64_t waited_ns() const noexcept {
    return waited_;
  }

private:
  struct task {
    task_id id;
    nanos begun;
    nanos work;
    double done; // ns of one core's work
    std::vector<nanos> marks;
    std::size_t next_mark;
  };
  void move_to(nanos t);

  std::uint32_t cores_;
  std::vector<task> tasks_; // in the order they were added
  task_id next_id_ = 1;
  nanos now_ = 0;
  std::uint64_t waited_ = 0;
};

} // namespace troupe::sim
