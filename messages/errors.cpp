#include "messages/errors.hpp"

namespace troupe::messages {

std::string to_string(errc x) {
  switch (x) {
  case errc::not_allowed:
    return "not_allowed";
  case errc::join_refused:
    return "join_refused";
  case errc::busy:
    return "busy";
  case errc::invalid_job:
    return "invalid_job";
  case errc::spawn_failed:
    return "spawn_failed";
  case errc::bad_request:
    return "bad_request";
  case errc::stale:
    return "stale";
  case errc::role_lost:
    return "role_lost";
  case errc::worker_failed:
    return "worker_failed";
  case errc::diverged:
    return "diverged";
  case errc::unknown_role:
    return "unknown_role";
  case errc::bad_arguments:
    return "bad_arguments";
  }
  return "error " + std::to_string(static_cast<int>(x));
}

std::string context_of(const caf::error& err) {
  if (!err || err.category() != errc_category
      || !err.context().match_elements<std::string>())
    return {};
  return err.context().get_as<std::string>(0);
}

} // namespace troupe::messages
