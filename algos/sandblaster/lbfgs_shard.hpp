#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/probe.hpp"
#include "messages/atoms.hpp"
#include "messages/control.hpp"
#include "messages/lbfgs.hpp"
#include "optim/lbfgs.hpp"
#include "optim/range_table.hpp"

// A Sandblaster L-BFGS parameter shard (algorithms.md §2): its slice of x,
// of the gradient, the direction, the work vector and the last m (s, y)
// pairs, in double. It executes the coordinator's vector commands on the
// slice (a dot answers the slice's partial sum), so vectors never travel to
// the coordinator; workers read the evaluation point and send per-portion
// gradient sums, each portion counted once per pass. Its messages are in
// messages/lbfgs.hpp.

namespace troupe::algos {

using lbfgs_shard_actor = caf::typed_actor<
    // Execute a vector command (op, slot a, slot b, alpha) on the slice;
    // a dot answers the partial sum, the others 0.
    caf::replies_to<messages::lbfgs_vec_msg>::with<messages::real>,
    // Start pass `pass` at x + t d: the evaluation point, no gradient yet.
    caf::replies_to<messages::point_atom, std::uint64_t,
                    messages::real>::with<messages::ack_atom>,
    // The evaluation point and its pass.
    caf::replies_to<messages::point_atom>::with<messages::lbfgs_point_msg>,
    // A portion's gradient sum for the slice: true if counted (the first
    // for that portion in this pass), false otherwise.
    caf::replies_to<messages::lbfgs_grad_msg>::with<bool>,
    // End of pass: the gradient at the point = the portions' sums in
    // portion order over their samples; answers the portions counted.
    caf::replies_to<messages::sum_atom, std::uint64_t>::with<std::uint64_t>,
    // Move to the point: s = point - x, y = g(point) - g into scratch,
    // x = point, g = g(point); answers the partial s.y, y.y and s.s.
    caf::replies_to<messages::accept_atom>::with<std::vector<messages::real>>,
    // Keep the scratch pair at ring position `pos`.
    caf::replies_to<messages::keep_atom,
                    std::uint32_t>::with<messages::ack_atom>,
    // The slice of x (the last accepted iterate), for the final result.
    caf::replies_to<messages::result_atom>::with<messages::lbfgs_point_msg>,
    // Checkpoints, from the driver only, at an iteration boundary: the
    // shard's state file (detail/lbfgs_state.hpp), and back.
    caf::replies_to<messages::save_atom>::with<std::string>,
    caf::replies_to<messages::resume_atom,
                    std::string>::with<messages::ack_atom>>;

/// Extra slots past the history ring of memory m.
inline std::uint32_t slot_trial_gradient(std::size_t m) noexcept {
  return static_cast<std::uint32_t>(4 + 2 * m);
}

/// Settings of one L-BFGS shard.
struct lbfgs_shard_config {
  std::uint32_t index = 0;
  optim::slice range;
  std::shared_ptr<const std::vector<float>> init; ///< the whole vector
  std::size_t memory = 10;
  /// The driver, the only one whose save and resume it obeys.
  caf::actor_addr driver;
};

/// The state of an L-BFGS shard.
struct lbfgs_shard_state {
  static inline const char* name = "lbfgs_shard";
  lbfgs_shard_config config;
  std::unique_ptr<optim::dense_store> store; ///< slots + 3 extra
  std::vector<double> point, scratch_s, scratch_y;
  std::uint64_t pass = 0;
  /// This pass's portions that arrived ahead of a lower one: id ->
  /// (samples, gradient sum). The others are already added to the trial
  /// gradient, in id order (next_fold: the lowest not yet added), so the
  /// sum is the same whatever the arrival order, and memory holds only the
  /// portions that arrived early.
  std::map<std::uint64_t, std::pair<std::uint64_t, std::vector<double>>> parts;
  std::set<std::uint64_t> counted; ///< this pass's portion ids
  std::uint64_t next_fold = 0, folded_samples = 0;
  std::uint64_t duplicates = 0, stale = 0, malformed = 0;
  actors::probe_ref probe;
};

/// Spawn with `sys.spawn(lbfgs_shard, config)`.
lbfgs_shard_actor::behavior_type
lbfgs_shard(lbfgs_shard_actor::stateful_pointer<lbfgs_shard_state> self,
            lbfgs_shard_config config);

} // namespace troupe::algos
