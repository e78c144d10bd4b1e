#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

#include "messages/control.hpp"
#include "messages/messages.hpp"

// The messages of the leader-based flow (LSGD, algorithms.md §4): a group
// leader asks its workers for their scores, tells the elected leader whom to
// send its parameters to, and the leader pulls them toward itself.

namespace troupe::messages {

// -- score_msg ----------------------------------------------------------------

/// A worker's leader score: the running mean of its recent training losses
/// (NaN before its first step).
struct score_msg {
  worker_id worker = 0;
  std::uint64_t steps = 0;
  real score;
};

/// Serializes or prints a score_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, score_msg& x) {
  return f(caf::meta::type_name("score_msg"), x.worker, x.steps, x.score);
}

// -- lead_msg -----------------------------------------------------------------

/// Tells an elected leader to send its parameters to `targets` with pull
/// strength `lambda`; the leader answers when it has sent them.
struct lead_msg {
  std::uint64_t round = 0;
  bool global = false; ///< a global round (lambda_G) or a group's
  double lambda = 0;
  std::vector<caf::actor> targets;
};

/// Serializes or prints a lead_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lead_msg& x) {
  return f(caf::meta::type_name("lead_msg"), x.round, x.global,
           as_bits(x.lambda), x.targets);
}

// -- pull_msg -----------------------------------------------------------------

/// A leader's parameters: the receiver moves x <- x - lambda * (x - values)
/// when it arrives (the leader copy is as old as the transfer).
struct pull_msg {
  std::uint64_t round = 0;
  bool global = false;
  worker_id leader = 0;
  double lambda = 0;
  tensor values;
};

/// Serializes or prints a pull_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pull_msg& x) {
  return f(caf::meta::type_name("pull_msg"), x.round, x.global, x.leader,
           as_bits(x.lambda), x.values);
}

/// One-line descriptions for logs.
std::string to_string(const score_msg& x);
std::string to_string(const lead_msg& x);
std::string to_string(const pull_msg& x);

/// Bytes on the wire of a pull (payload included), for the counters.
std::uint64_t wire_size(const pull_msg& x);

} // namespace troupe::messages
