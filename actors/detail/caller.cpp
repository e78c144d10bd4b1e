#include "actors/detail/caller.hpp"

#include "actors/detail/log.hpp"
#include "messages/errors.hpp"

namespace troupe::actors::detail {

void log_refusal(std::string_view line) {
  static limited_log refusals{1};
  refusals.warn(line);
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
