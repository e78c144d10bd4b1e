// The project's error codes: expected failures that travel between actors
// (and nodes) as caf::error of category "troupe". CAF's own codes
// (caf::sec) keep covering timeouts and transport failures.

#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>

namespace troupe::messages {

/// A troupe error code (category "troupe" on the wire).
enum class errc : std::uint8_t {
  /// The sender may not ask this actor for this (docs/deployment.md, "Who
  /// may call what"); the context names the actor, the verb and the node.
  not_allowed = 1,
  /// A node agent was asked to spawn a role nobody registered; the context
  /// names the role and lists the registered ones (role_registry.hpp).
  unknown_role = 2,
  /// A role's spawn arguments have the wrong types; the context names the
  /// role, the expected and the given types.
  bad_arguments = 3,
};

/// The error category of errc on the wire.
inline constexpr caf::atom_value errc_category = caf::atom("troupe");

/// The name of a code ("not_allowed").
std::string to_string(errc x);

/// Makes an error of code `x` whose context is `what` (found by CAF through
/// argument-dependent lookup, so `err == errc::not_allowed` works).
inline caf::error make_error(errc x, std::string what) {
  return {static_cast<std::uint8_t>(x), errc_category,
          caf::make_message(std::move(what))};
}

/// Makes an error of code `x` without context.
inline caf::error make_error(errc x) {
  return {static_cast<std::uint8_t>(x), errc_category};
}

} // namespace troupe::messages
