// The project's error codes: expected failures that travel between actors
// (and nodes) as caf::error of category "troupe". CAF's own codes
// (caf::sec) keep covering timeouts, transport and deserialization
// failures. docs/errors.md has the table of who sends which code.
//
// CAF 0.17.6 already ships CAF_ERROR_CODE_ENUM(type, category) in
// caf/error.hpp, for forward compatibility with 0.18 (it specializes
// caf::detail::error_factory), so errc uses it: `caf::error{errc::x,
// context}`, `caf::make_error(errc::x, context)`, a `caf::result<T>` made
// from a code, and `err == errc::x` (CAF's comparison through the implicit
// conversion) all work as in later CAF. What 0.17 does not have is 0.18's
// renderer by to_string: register_types() (registry.cpp) adds one with
// add_error_category, so actor_system::render prints
// "troupe:not_allowed: CONTEXT". Do not include caf/is_error_code_enum.hpp
// here: it defines an incompatible one-argument macro of the same name.

#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>

namespace troupe::messages {

/// A troupe error code (category "troupe" on the wire). The context of each
/// is one string naming what failed (the actor, the peer, the index).
enum class errc : std::uint8_t {
  /// The sender may not ask this actor for this (docs/deployment.md, "Who
  /// may call what"); the context names the actor, the verb and the node.
  not_allowed = 1,
  /// The join service refuses a node (another wire version, a wrong or
  /// missing token, other heartbeat settings, no slots, the job full, a
  /// failed setup or another job fingerprint); the context is the reason
  /// the node prints.
  join_refused = 2,
  /// A node agent refuses to set up a second job (it takes part in one).
  busy = 3,
  /// A job that cannot be built from its spec (a node agent's setup).
  invalid_job = 4,
  /// A node agent cannot spawn a role: no job set up, the agent stopping, an
  /// index outside the job, or the role's construction failed; the context
  /// says which.
  spawn_failed = 5,
  /// A request whose arguments do not fit its receiver: a fetch of another
  /// range, a vector command on a slot that does not exist, a ring position
  /// outside the history, a leader's broadcast before the replica exists.
  bad_request = 6,
  /// A request for a step that is over (an L-BFGS sum of another pass).
  stale = 7,
  /// The roles a request needs are gone: every worker an evaluator averages
  /// was lost, or none of them answered.
  role_lost = 8,
  /// A role failed computing its part (an exception other than a
  /// divergence); the context is the reason. It ends the role.
  worker_failed = 9,
  /// A role's computation diverged (a non-finite loss or gradient); the
  /// context names the step or portion. It ends the role.
  diverged = 10,
  /// A node agent was asked to spawn a role nobody registered; the context
  /// names the role and lists the registered ones (role_registry.hpp).
  unknown_role = 11,
  /// A role's spawn arguments have the wrong types; the context names the
  /// role, the expected and the given types.
  bad_arguments = 12,
};

} // namespace troupe::messages

// Before any use of caf::error{errc::x, ...}: the specialization it makes
// must precede the constructor's instantiation.
CAF_ERROR_CODE_ENUM(troupe::messages::errc, "troupe")

namespace troupe::messages {

/// The error category of errc on the wire (the name given to
/// CAF_ERROR_CODE_ENUM above).
inline constexpr caf::atom_value errc_category = caf::atom("troupe");

/// The name of a code ("not_allowed").
std::string to_string(errc x);

/// Makes an error of code `x` whose context is `what` (unqualified calls
/// find it by argument-dependent lookup).
inline caf::error make_error(errc x, std::string what) {
  return caf::error{x, std::move(what)};
}

/// Makes an error of code `x` without context.
inline caf::error make_error(errc x) {
  return caf::error{x};
}

/// The context text of a troupe error ("" if it has none or another
/// category): what a receiver shows of a refusal.
std::string context_of(const caf::error& err);

} // namespace troupe::messages
