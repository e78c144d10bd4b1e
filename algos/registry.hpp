// The one list of algorithms: name -> factory. The CLI, the node agent's job
// builder and the tests make an algorithm by name here; an application adds
// its own with register_algorithm() before it builds a job. A node's roles
// are the shared ones plus every registered algorithm's own
// (register_roles).

#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "algos/algorithm.hpp"

namespace troupe::algos {

/// Makes a fresh algorithm object with its default options.
using algorithm_factory = std::function<algorithm_handle()>;

/// One registered algorithm.
struct algorithm_entry {
  std::string name; ///< as --algo names it; the object's name() too
  algorithm_factory make;
};

/// Adds (or replaces) an algorithm. Thread-safe; call it before the jobs
/// that use it are built (an application's own algorithm, a test's).
void register_algorithm(algorithm_entry entry);

/// The registered algorithms, built-in ones first, in registration order.
std::vector<algorithm_entry> registered_algorithms();

/// Whether `name` is registered.
bool has_algorithm(const std::string& name);

/// Makes the algorithm `name` with its default options; throws
/// std::invalid_argument naming it and listing the registered ones if there
/// is none.
algorithm_handle make_algorithm(const std::string& name);

/// The names of the registered algorithms (in registration order) for which
/// `holds` is true of a fresh object with its default options: the sets the
/// CLI's help and refusals name ("downpour, easgd"), never a list kept by
/// hand.
std::vector<std::string>
algorithms_where(const std::function<bool(const algorithm&)>& holds);

/// "a", "a and b", "a, b and c".
std::string joined_names(const std::vector<std::string>& names);

/// Registers the roles a node agent spawns by name: the shared ones
/// (actors::register_shared_roles: shard, worker) and every registered
/// algorithm's own (algorithm::add_roles). Throws std::invalid_argument if
/// two of them register the same name. A node binary with roles of its own
/// adds them to the same registry.
void register_roles(actors::role_registry& roles);

/// A fresh registry with register_roles(): what `troupe node` and
/// net::run_node give a node agent that was not given roles.
std::shared_ptr<const actors::role_registry> node_roles();

} // namespace troupe::algos
