#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "messages/messages.hpp"

// A node joining a running job (elastic scale-up, docs/deployment.md): the
// live workers cede part of their remaining steps and of the examples they
// have not drawn yet this epoch; the joining node's workers take them.

namespace troupe::messages {

/// Steps and examples handed from one worker to another when a node joins:
/// a live worker's answer to cede_atom (what it gave up), and a joining
/// worker's share (what it takes, in its spawn arguments).
struct cede_msg {
  worker_id worker = 0;    ///< who gave them up, or who takes them
  std::uint64_t steps = 0; ///< steps of its quota
  /// Examples (indices into the training set) not drawn yet this epoch.
  std::vector<std::uint64_t> examples;
};

/// Serializes or prints a cede_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cede_msg& x) {
  return f(caf::meta::type_name("cede_msg"), x.worker, x.steps, x.examples);
}

/// A cede_msg without its examples' values ("cede_msg(3, 120 steps, 2000
/// examples)").
std::string to_string(const cede_msg& x);

} // namespace troupe::messages
