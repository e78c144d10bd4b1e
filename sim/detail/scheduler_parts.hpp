#pragma once

// The scheduler's own pieces (sim/scheduler.cpp, sim/scheduler_model.cpp):
// its hash and random helpers, an actor's record and an event.

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <caf/mailbox_element.hpp>

#include "sim/scheduler.hpp"

namespace troupe::sim {

namespace detail {

inline std::uint64_t splitmix(std::uint64_t& s) noexcept {
  auto z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline void fold(std::uint64_t& h, std::uint64_t x) noexcept {
  for (int i = 0; i < 8; ++i) {
    h ^= (x >> (8 * i)) & 0xff;
    h *= 0x100000001b3ULL;
  }
}

constexpr nanos never = std::numeric_limits<nanos>::max();

} // namespace detail

/// A FIFO of messages an actor is due to handle, chained through the
/// elements' own links.
struct scheduler::record {
  caf::strong_actor_ptr self; ///< held until the actor is done
  caf::scheduled_actor* actor = nullptr;
  caf::mailbox_element* head = nullptr;
  caf::mailbox_element* tail = nullptr;
  nanos busy_until = 0;
  std::uint32_t node = 0;
  bool known = false;
  bool queued = false; ///< in the ready list or waiting to wake
  bool launch = false; ///< not started yet
  bool done = false;
  /// Its last handler's work is on the host's shared cores: it takes no
  /// message until that work ends (busy_until is not known before).
  bool computing = false;

  bool has_work() const noexcept {
    return launch || head != nullptr;
  }
  void push(caf::mailbox_element_ptr x) noexcept {
    auto* p = x.release();
    p->next = nullptr;
    if (tail)
      tail->next = p;
    else
      head = p;
    tail = p;
  }
  void push_front(caf::mailbox_element_ptr x) noexcept {
    auto* p = x.release();
    p->next = head;
    head = p;
    if (!tail)
      tail = p;
  }
  caf::mailbox_element_ptr pop() noexcept {
    auto* p = head;
    head = static_cast<caf::mailbox_element*>(p->next);
    if (!head)
      tail = nullptr;
    p->next = nullptr;
    return caf::mailbox_element_ptr{p};
  }
  void clear() noexcept {
    while (head)
      pop();
  }
};

struct scheduler::event {
  nanos at = 0;
  std::uint64_t seq = 0;
  caf::strong_actor_ptr to;
  caf::mailbox_element_ptr msg; ///< null: a wake-up
  caf::actor_id from = 0;
  std::uint64_t bytes = 0;     ///< on the links
  std::uint64_t cpu_bytes = 0; ///< (de)serialized
  std::int64_t crash = -1;     ///< a node that crashes (no `to`, no `msg`)
  nanos sent = 0;              ///< when it left its sender
  bool depart = false;         ///< due to leave its node at `at` (= `sent`)
  bool decoded = false;        ///< deserialized on its node, due to its actor
  nanos touch = 0;             ///< its writer's page faults in a fresh segment
};

/// What a task on the host's shared cores is (scheduler_sharing.cpp): an
/// actor's handler, with what it sent after part of its work, or a node's
/// broker (de)serializing a message.
struct scheduler::shared_work {
  caf::actor_id actor = 0; ///< 0: a broker's
  std::uint32_t node = 0;
  /// A handler's sends, each due when the work before it is done.
  std::vector<std::pair<nanos, event>> sends;
  std::size_t released = 0;
};

/// A message a node's broker is due to encode (before it leaves) or decode
/// (before its actor gets it).
struct scheduler::broker_job {
  nanos work = 0;
  event msg;
  bool encode = false;
};

} // namespace troupe::sim
