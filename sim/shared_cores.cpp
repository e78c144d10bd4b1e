#include "sim/shared_cores.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace troupe::sim {

namespace {

/// Work within half a nanosecond of a mark has reached it (the shares are
/// fractions of a core: sums of them are not exact).
constexpr double mark_slack = 0.5;

} // namespace

shared_cores::shared_cores(std::uint32_t cores) : cores_(cores) {
  if (cores == 0)
    throw std::invalid_argument("shared cores need a core");
}

double shared_cores::rate() const noexcept {
  return tasks_.size() <= cores_
             ? 1.0
             : static_cast<double>(cores_) / static_cast<double>(tasks_.size());
}

void shared_cores::move_to(nanos t) {
  if (t < now_)
    throw std::logic_error("shared cores moved back in time");
  auto r = rate();
  for (auto& x : tasks_)
    x.done += static_cast<double>(t - now_) * r;
  now_ = t;
}

shared_cores::task_id shared_cores::add(nanos now, nanos work,
                                        std::vector<nanos> marks) {
  if (work <= 0)
    throw std::invalid_argument("a task on shared cores needs work");
  move_to(now);
  // Marks past the work are its end; ones at 0 were reached at the start
  // (their owner hears of them with the first mark).
  marks.erase(std::remove_if(marks.begin(), marks.end(),
                             [work](nanos m) { return m >= work; }),
              marks.end());
  if (!std::is_sorted(marks.begin(), marks.end()))
    throw std::invalid_argument("a task's marks must ascend");
  auto id = next_id_++;
  tasks_.push_back(task{id, now, work, 0.0, std::move(marks), 0});
  return id;
}

void shared_cores::remove(nanos now, task_id id) {
  move_to(now);
  tasks_.erase(std::remove_if(tasks_.begin(), tasks_.end(),
                              [id](const task& x) { return x.id == id; }),
               tasks_.end());
}

nanos shared_cores::next() const noexcept {
  nanos best = std::numeric_limits<nanos>::max();
  auto r = rate();
  for (auto& x : tasks_) {
    auto target = x.next_mark < x.marks.size() ? x.marks[x.next_mark] : x.work;
    auto left = static_cast<double>(target) - x.done;
    auto at = left <= mark_slack
                  ? now_
                  : now_ + static_cast<nanos>(std::ceil(left / r));
    best = std::min(best, at);
  }
  return best;
}

void shared_cores::advance(nanos t, std::vector<reached>& out) {
  move_to(t);
  for (auto& x : tasks_) {
    for (; x.next_mark < x.marks.size(); ++x.next_mark) {
      if (x.done + mark_slack < static_cast<double>(x.marks[x.next_mark]))
        break;
      out.push_back({x.id, x.marks[x.next_mark], false});
    }
    if (x.next_mark == x.marks.size()
        && x.done + mark_slack >= static_cast<double>(x.work)) {
      out.push_back({x.id, x.work, true});
      waited_ += static_cast<std::uint64_t>(
          std::max<nanos>(0, t - x.begun - x.work));
      x.work = -1; // ended: leaves below
    }
  }
  tasks_.erase(std::remove_if(tasks_.begin(), tasks_.end(),
                              [](const task& x) { return x.work < 0; }),
               tasks_.end());
}

} // namespace troupe::sim
