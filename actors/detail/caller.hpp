// Who sent the message being handled. CAF 0.17 delivers a message from any
// connected node to any actor whose handle was ever serialized (actor ids are
// small sequential numbers), so every reachable actor checks its caller
// before it obeys a verb that can harm the job; docs/deployment.md ("Who may
// call what") lists the rules. One line per handler:
//
//   if (!detail::from_here(self))
//     return detail::refuse(self, "the join service", "members", "this
//     process");

#pragma once

#include <string>
#include <string_view>

#include <caf/error.hpp>
#include <caf/node_id.hpp>

namespace troupe::actors::detail {

/// True if the message being handled comes from an actor on node `n`. A
/// message without sender, or `n` unset, never does.
template <class Self>
bool from_node(Self* self, const caf::node_id& n) {
  const auto& sender = self->current_sender();
  return sender != nullptr && n != caf::none && sender->node() == n;
}

/// True if the message being handled comes from an actor of this process
/// (without the middleman every actor's node is unset, and all are here).
template <class Self>
bool from_here(Self* self) {
  const auto& sender = self->current_sender();
  return sender != nullptr && sender->node() == self->node();
}

/// True if the message being handled comes from node `owner` (a role's
/// coordinator), or, with `owner` unset (no middleman: every actor is of
/// this process), from this process.
template <class Self>
bool from_owner_node(Self* self, const caf::node_id& owner) {
  return owner == caf::none ? from_here(self) : from_node(self, owner);
}

/// Logs `line` as a warning unless another refusal was logged in the last
/// second (then it is only counted, and the count given on the next line).
void log_refusal(std::string_view line);

/// Logs a refused request (log_refusal) and returns the error the caller gets:
/// messages::errc::not_allowed, naming `actor`, `verb`, the sender's node and
/// who may ask (`rule`).
caf::error refuse(const caf::node_id& from, bool has_sender,
                  std::string_view actor, std::string_view verb,
                  std::string_view rule);

/// The same for the message `self` is handling.
template <class Self>
caf::error refuse(Self* self, std::string_view actor, std::string_view verb,
                  std::string_view rule) {
  const auto& sender = self->current_sender();
  return refuse(sender ? sender->node() : caf::node_id{}, sender != nullptr,
                actor, verb, rule);
}

} // namespace troupe::actors::detail
