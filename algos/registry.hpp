// The one list of algorithms: name -> factory. The CLI, the node agent's job
// builder and the tests make an algorithm by name here; an application adds
// its own with register_algorithm() before it builds a job.

#pragma once

#include <functional>
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

} // namespace troupe::algos
