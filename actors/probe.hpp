#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/actor_clock.hpp>
#include <caf/node_id.hpp>

#include "actors/clock.hpp"
#include "messages/metrics.hpp"

// Probes: what every troupe actor records about itself, cheap enough to stay
// on. An actor owns an actor_probe and counts each message it handles (type,
// bytes, sender, mailbox depth, time in the handler), each message it sends,
// its errors and its progress. The actor's thread writes; a node monitor
// (monitor.hpp) reads snapshots from another thread, so counters are relaxed
// atomics and the few lists take a lock. A probe reads the time on its
// actor's clock (actors/clock.hpp) once bound to it (make_probe(self, ...)).
//
// Application actors use the same API: make_probe(), then on_message() in
// each handler (see docs/monitoring.md).

namespace troupe::actors {

/// Message kinds counted by type: the shared roles' own here; an
/// algorithm's or an application's kinds are registered by name
/// (message_kind()), so a new algorithm never edits this file.
enum class msg_type : std::uint8_t {
  push,
  fetch,
  params,
  progress,
  done,
  stop,
  start,
  step,
  adopt,
  track,
  untrack,
  stats,
  eval,
  result,
  setup,
  spawn,
  metrics,
  leader, ///< a role's leader-change event, for the job's observers
  peers,
  leave,
  other,
  builtin_count_
};

/// Kinds a process can count, the built-in ones included; message_kind()
/// answers `other` once they are taken.
inline constexpr std::size_t max_message_kinds = 64;

/// The kind named `name` ("gossip", "lead", ...), registered on first use;
/// the same name gives the same kind in a process. For an algorithm's or an
/// application's own messages: call it once (a static) and pass the kind to
/// on_message() and sent(). A built-in name gives the built-in kind.
msg_type message_kind(const std::string& name);

/// The name of a message kind ("push", "params", ...).
const char* to_string(msg_type t) noexcept;

class actor_probe {
public:
  using clock = clock_type; ///< the type of its time points

  /// `expects_progress`: a long time without progress() means stuck (workers,
  /// shards, coordinators); roles that only answer requests say false.
  actor_probe(std::string name, std::string role, bool expects_progress);

  /// Records the actor's identity (key = node id / actor id) and its clock
  /// (its actor system's, which must outlive the actor's use of the probe);
  /// before, and without one, the probe reads the process's steady clock.
  void bind(const caf::node_id& node, caf::actor_id id,
            const caf::actor_clock* clock = nullptr);

  /// The time now on the probe's clock.
  clock::time_point now() const noexcept {
    return actors::now(clock_.load(std::memory_order_relaxed));
  }

  const std::string& name() const noexcept {
    return name_;
  }
  const std::string& key() const noexcept {
    return key_;
  }

  /// A message arrived: its kind, size, sender and the mailbox depth.
  void received(msg_type t, std::uint64_t bytes,
                const caf::strong_actor_ptr& from,
                std::size_t mailbox) noexcept;
  /// A message was sent.
  void sent(msg_type t, std::uint64_t bytes) noexcept;
  /// A handler ran for `ns` nanoseconds.
  void handled(std::uint64_t ns) noexcept;
  void error() noexcept;
  /// The actor made progress (a step, an applied push, ...).
  void progress() noexcept;
  /// What the actor is doing; `what` must be a string literal.
  void activity(const char* what) noexcept;
  /// Sets an algorithm gauge (steps, leader, push_sum_weight, ...).
  void gauge(const std::string& name, double value);
  /// Adds an observation to a histogram with the given upper bounds (the
  /// first call fixes the bounds).
  void observe(const std::string& name, std::uint64_t value,
               const std::vector<std::uint64_t>& bounds);
  /// The actor terminated.
  void finish() noexcept;

  /// What the probe counted; its ages relative to `now` (a time on the
  /// clock the probe was bound to).
  messages::actor_metrics snapshot(clock::time_point now) const;

private:
  struct counts {
    std::atomic<std::uint64_t> n{0}, bytes{0};
  };
  struct peer {
    caf::node_id node;
    caf::actor_id id = 0;
    clock::time_point last;
    std::uint64_t messages = 0;
  };
  struct histogram {
    std::string name;
    std::vector<std::uint64_t> bounds, counts;
    double sum = 0;
  };

  static std::int64_t ns_of(clock::time_point t) noexcept;

  std::string name_, role_, key_;
  bool expects_progress_;
  std::atomic<const caf::actor_clock*> clock_{nullptr};
  std::atomic<std::int64_t> created_ns_{ns_of(process_now())};
  std::array<counts, max_message_kinds> in_, out_;
  std::atomic<std::uint64_t> handler_ns_{0}, handler_max_ns_{0}, errors_{0};
  std::atomic<std::uint64_t> mailbox_{0}, mailbox_max_{0};
  std::atomic<std::int64_t> progress_ns_{-1};
  std::atomic<const char*> activity_{"starting"};
  std::atomic<std::int64_t> done_ns_{-1};
  mutable std::mutex mtx_; ///< guards the lists below
  std::vector<peer> peers_;
  std::vector<messages::named_value> gauges_;
  std::vector<histogram> histograms_;
};

/// An actor's hold on its probe: marks it finished when the actor's state is
/// destroyed.
class probe_ref {
public:
  probe_ref() = default;
  explicit probe_ref(std::shared_ptr<actor_probe> p) noexcept
      : p_(std::move(p)) {}
  probe_ref(probe_ref&&) noexcept = default;
  probe_ref& operator=(probe_ref&& other) noexcept {
    if (p_ && p_ != other.p_)
      p_->finish();
    p_ = std::move(other.p_);
    return *this;
  }
  probe_ref(const probe_ref&) = delete;
  probe_ref& operator=(const probe_ref&) = delete;
  ~probe_ref() {
    if (p_)
      p_->finish();
  }
  actor_probe* get() const noexcept {
    return p_.get();
  }
  actor_probe* operator->() const noexcept {
    return p_.get();
  }
  explicit operator bool() const noexcept {
    return static_cast<bool>(p_);
  }

private:
  std::shared_ptr<actor_probe> p_;
};

/// Probes can be switched off process-wide (the overhead benchmark compares
/// both); they are on by default.
bool probes_enabled() noexcept;
void set_probes_enabled(bool on) noexcept;

/// Creates a probe and registers it with this process's monitor.
probe_ref make_probe(std::string name, std::string role, bool expects_progress);

/// A node's key in the monitor's picture: CAF's node id, or "local" in a
/// process without the middleman (CAF's "invalid-node"). Actors' keys are
/// "<node key>/<actor id>".
std::string node_key(const caf::node_id& node);

/// make_probe, bound to the actor `self` (its node and id).
template <class Self>
probe_ref make_probe(Self* self, std::string name, std::string role,
                     bool expects_progress) {
  auto p = make_probe(std::move(name), std::move(role), expects_progress);
  p->bind(self->node(), self->id(), &self->clock());
  return p;
}

/// Snapshots of this process's probes (finished actors stay listed for a
/// minute), their ages relative to `now` (a node monitor's: its clock).
std::vector<messages::actor_metrics>
snapshot_probes(clock_type::time_point now);
/// The same, relative to the process's steady clock.
std::vector<messages::actor_metrics> snapshot_probes();

/// Times a handler: constructed at its start, records at its end.
class probe_scope {
public:
  explicit probe_scope(actor_probe* p) noexcept
      : probe_(p), t0_(p ? p->now() : actor_probe::clock::time_point{}) {}
  probe_scope(probe_scope&& other) noexcept
      : probe_(other.probe_), t0_(other.t0_) {
    other.probe_ = nullptr;
  }
  probe_scope(const probe_scope&) = delete;
  probe_scope& operator=(const probe_scope&) = delete;
  ~probe_scope() {
    if (probe_)
      probe_->handled(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(probe_->now()
                                                               - t0_)
              .count()));
  }

private:
  actor_probe* probe_;
  actor_probe::clock::time_point t0_;
};

/// Call first in a handler: counts the current message and times the handler
/// until the returned scope ends. `self` is the actor (any scheduled actor).
template <class Self>
probe_scope on_message(actor_probe* p, Self* self, msg_type t,
                       std::uint64_t bytes) {
  if (p == nullptr || !probes_enabled())
    return probe_scope{nullptr};
  p->received(t, bytes, self->current_sender(), self->mailbox().size());
  return probe_scope{p};
}

/// Serialized size of a message without a tensor (atoms, small structs):
/// an estimate used for byte counts.
inline constexpr std::uint64_t small_message_bytes = 32;

} // namespace troupe::actors
