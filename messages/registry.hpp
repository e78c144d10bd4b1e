#pragma once

#include <string>
#include <vector>

namespace caf {
class actor_system_config;
} // namespace caf

namespace troupe::messages {

/// Registers every troupe message type with `cfg`: the one place that does.
/// Call it on every node before constructing the actor_system; both sides of
/// a connection must register the same names.
void register_types(caf::actor_system_config& cfg);

/// Returns the wire names of all registered message types, in registration
/// order (tests check each one crosses a process boundary).
std::vector<std::string> registered_type_names();

} // namespace troupe::messages
