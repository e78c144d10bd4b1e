#include "actors/stop_request.hpp"

#include <caf/send.hpp>

#include "messages/atoms.hpp"

namespace troupe::actors {

bool stop_request::request(std::string reason) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (requested_)
    return false;
  requested_ = true;
  reason_ = std::move(reason);
  // As the coordinator itself (it obeys a stop from its own process only),
  // with no actor of this thread: a scoped_actor would bind this thread to
  // the actor system's logger and keep the system from shutting down.
  if (coordinator_)
    caf::send_as(coordinator_, coordinator_, messages::stop_atom::value);
  return true;
}

bool stop_request::requested() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return requested_;
}

std::string stop_request::reason() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return reason_;
}

bool stop_request::attach(caf::actor self) {
  std::lock_guard<std::mutex> guard{mtx_};
  coordinator_ = std::move(self);
  return requested_;
}

void stop_request::detach() noexcept {
  std::lock_guard<std::mutex> guard{mtx_};
  coordinator_ = nullptr;
}

} // namespace troupe::actors
