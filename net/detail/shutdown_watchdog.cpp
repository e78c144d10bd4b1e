#include "net/detail/shutdown_watchdog.hpp"

#include <cstdlib>
#include <utility>

#include "actors/detail/log.hpp"

namespace troupe::net::detail {

shutdown_watchdog::shutdown_watchdog(std::chrono::milliseconds limit)
    : limit_(limit) {}

shutdown_watchdog::~shutdown_watchdog() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

void shutdown_watchdog::arm(std::string what, std::string outcome, int status) {
  if (thread_.joinable())
    return;
  thread_ = std::thread{[this, what = std::move(what),
                         outcome = std::move(outcome), status] {
    std::unique_lock<std::mutex> guard{mtx_};
    if (cv_.wait_for(guard, limit_, [this] { return done_; }))
      return;
    auto& log = actors::detail::log();
    log.error("{} did not end within {} ms (an actor that never ended, or a "
              "detached actor's thread waiting for the last reference to its "
              "actor); exiting with status {}: {}",
              what, limit_.count(), status, outcome);
    log.flush();
    std::_Exit(status);
  }};
}

} // namespace troupe::net::detail
