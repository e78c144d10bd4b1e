// A way for code outside the actor system (a signal watcher) to end a
// running job through its coordinator's stop path, the one --max-seconds
// takes: the workers stop, the job evaluates once more and reports.

#pragma once

#include <mutex>
#include <string>

#include <caf/actor.hpp>

namespace troupe::actors {

/// Shared between the code that asks for the stop (any thread) and the
/// job's coordinator (job_config::stop). A request made before the
/// coordinator starts stops it as soon as it does.
class stop_request {
public:
  /// Asks the job to stop with `reason` as its stop reason. Thread-safe;
  /// returns false (and changes nothing) if a stop was asked for already.
  bool request(std::string reason);

  /// Whether a stop was asked for.
  bool requested() const;

  /// The reason given to request() (empty before).
  std::string reason() const;

  /// Called by the coordinator once it runs (`self` its handle). Returns
  /// whether a stop was asked for already: the coordinator then stops.
  bool attach(caf::actor self);

  /// Called when the coordinator ends: later requests are only recorded.
  void detach() noexcept;

private:
  mutable std::mutex mtx_;
  bool requested_ = false;
  std::string reason_;
  caf::actor coordinator_;
};

} // namespace troupe::actors
