#pragma once

// The last bound on a node's shutdown. CAF 0.17 tears an actor system down
// without a time limit: it waits for every actor to end and for every
// detached actor's thread, which waits until the last reference to its actor
// is gone. The node agent ends after its roles (actors/node_agent.cpp) so
// that none is left behind; should something still hold an actor, the
// watchdog names the wait in the log and ends the process with the node's
// status instead of hanging.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace troupe::net::detail {

class shutdown_watchdog {
public:
  /// Watches for at most `limit` once armed.
  explicit shutdown_watchdog(std::chrono::milliseconds limit);

  shutdown_watchdog(const shutdown_watchdog&) = delete;
  shutdown_watchdog& operator=(const shutdown_watchdog&) = delete;

  /// Ends the watch (the shutdown finished in time).
  ~shutdown_watchdog();

  /// Starts the countdown: unless destroyed within the limit, logs `what`
  /// as the wait that did not end and `outcome` (the node's result), and
  /// exits with `status`.
  void arm(std::string what, std::string outcome, int status);

private:
  std::chrono::milliseconds limit_;
  std::mutex mtx_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

} // namespace troupe::net::detail
