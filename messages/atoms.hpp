#pragma once

#include <caf/atom.hpp>

// Atoms for verbs that carry no data of their own. CAF 0.17 limits an atom to
// 10 characters (caf::atom static_asserts it). Atoms need no registration:
// CAF serializes them as built-in atom_value.

namespace troupe::messages {

/// Acknowledges an applied push.
using ack_atom = caf::atom_constant<caf::atom("ack")>;

/// Asks a peer to echo a message back (tests, liveness checks).
using echo_atom = caf::atom_constant<caf::atom("echo")>;

/// Asks an actor or node to shut down cleanly.
using stop_atom = caf::atom_constant<caf::atom("stop")>;

} // namespace troupe::messages
