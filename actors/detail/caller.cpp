#include "actors/detail/caller.hpp"

#include <chrono>
#include <cstdint>
#include <mutex>

#include "actors/detail/log.hpp"
#include "messages/errors.hpp"

namespace troupe::actors::detail {

namespace {

/// One refusal line per second at most: an attacker must not flood the log.
struct refusal_limiter {
  std::mutex mtx;
  std::chrono::steady_clock::time_point last{};
  std::uint64_t quiet = 0; ///< refusals not logged since the last line

  /// The number of refusals to mention before this one, or -1 to stay quiet.
  std::int64_t admit() {
    std::lock_guard<std::mutex> guard{mtx};
    auto now = std::chrono::steady_clock::now();
    if (last != std::chrono::steady_clock::time_point{}
        && now - last < std::chrono::seconds{1}) {
      ++quiet;
      return -1;
    }
    last = now;
    auto n = static_cast<std::int64_t>(quiet);
    quiet = 0;
    return n;
  }
};

refusal_limiter& limiter() {
  static refusal_limiter instance;
  return instance;
}

} // namespace

void log_refusal(std::string_view line) {
  if (auto before = limiter().admit(); before >= 0)
    log().warn("{}{}", line,
               before > 0 ? " (" + std::to_string(before)
                                + " more refusals not logged)"
                          : std::string{});
}

caf::error refuse(const caf::node_id& from, bool has_sender,
                  std::string_view actor, std::string_view verb,
                  std::string_view rule) {
  std::string who = has_sender ? "node " + to_string(from)
                               : std::string{"an anonymous sender"};
  std::string what = std::string{actor} + " refuses '" + std::string{verb}
                     + "' from " + who + ": only " + std::string{rule}
                     + " may ask";
  log_refusal(what);
  return messages::make_error(messages::errc::not_allowed, what);
}

} // namespace troupe::actors::detail
