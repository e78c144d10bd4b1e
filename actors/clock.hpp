#pragma once

// Time as an actor sees it. Every actor reads the time through its actor
// system's clock (caf::actor_clock): in a process that is the steady clock,
// in `troupe simulate` a virtual clock that only the simulator advances
// (sim/scheduler.hpp). No actor reads the wall clock or sleeps directly:
// tests/actors/clock_check_test.cpp enforces it.

#include <chrono>
#include <cstdint>

#include <caf/actor_clock.hpp>
#include <caf/actor_system.hpp>
#include <caf/local_actor.hpp>

namespace troupe::actors {

using clock_type = caf::actor_clock::clock_type;
using time_point = caf::actor_clock::time_point;

/// The time now, as the actor's system sees it.
inline time_point now(const caf::local_actor* self) noexcept {
  return self->clock().now();
}
inline time_point now(caf::actor_system& sys) noexcept {
  return sys.clock().now();
}

/// The process's steady clock, for what no actor's clock reaches (yet): a
/// probe before its actor binds it, a cluster view read before (or after)
/// its monitor runs. Never for an actor's own decisions: those read now().
time_point process_now() noexcept;

/// The time now on `clock`, bound later (a probe's, a cluster view's): the
/// process's steady clock while it is null.
inline time_point now(const caf::actor_clock* clock) noexcept {
  return clock != nullptr ? clock->now() : process_now();
}

/// Seconds from `t0` to now on `self`'s clock.
double seconds_since(const caf::local_actor* self, time_point t0) noexcept;

/// Nanoseconds from `t0` to now on `self`'s clock.
std::uint64_t nanoseconds_since(const caf::local_actor* self,
                                time_point t0) noexcept;

/// Milliseconds since the Unix epoch, for records that name a moment (a
/// failure's "unix_ms" in the job's JSON): the system clock in a process;
/// under a time model (a simulation) the virtual clock's milliseconds since
/// its epoch, so that a simulated run's records are reproducible.
std::int64_t unix_ms(const caf::local_actor* self);

/// What kind of work an actor reports to a time model.
enum class work_kind : std::uint8_t {
  step,    ///< a training step's forward and backward pass
  forward, ///< a forward pass only (evaluation)
  stage,   ///< a pipeline stage's share of a step
  update,  ///< a shard's update: `samples` counts the values updated
};

/// A model of how long work takes, installed by a simulator: the actor
/// system's scheduler implements it (sim::scheduler). In a process without
/// one, work takes the time it takes.
class time_model {
public:
  virtual ~time_model();
  /// `self` did `samples` samples of `kind` work (values updated for
  /// work_kind::update); `share` is the fraction of the whole model's cost
  /// (a pipeline stage's share, else 1).
  virtual void compute(const caf::local_actor* self, work_kind kind,
                       std::uint64_t samples, double share)
      = 0;
  /// `self` is busy for `d` (a configured delay).
  virtual void busy(const caf::local_actor* self, std::chrono::nanoseconds d)
      = 0;
};

/// The time model of `self`'s system, or null outside a simulation.
time_model* time_model_of(const caf::local_actor* self) noexcept;

/// Reports work `self` did to the system's time model (none: nothing to do,
/// the work took real time).
void did_work(const caf::local_actor* self, work_kind kind,
              std::uint64_t samples, double share = 1.0);

/// Keeps `self` busy for `d`: sleeps in a process, takes `d` of virtual time
/// in a simulation.
void spend(const caf::local_actor* self, std::chrono::nanoseconds d);

} // namespace troupe::actors
