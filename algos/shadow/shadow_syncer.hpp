#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/node_id.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/clock.hpp"
#include "actors/comm_policy.hpp"
#include "actors/interfaces.hpp"
#include "actors/probe.hpp"
#include "messages/gossip.hpp"
#include "optim/shadow.hpp"

namespace troupe::actors {
struct job_config;
} // namespace troupe::actors

namespace troupe::algos {

struct shadow_syncer_saved;

/// A shadow syncer (algorithms.md §6): synchronizes its workers in the
/// background, round after round, while they train without waiting.
using shadow_syncer_actor = caf::typed_actor<
    // The job's syncers in index order (itself included): start the rounds.
    caf::reacts_to<messages::peers_atom, std::vector<caf::actor>>,
    // Another syncer's sum of snapshots (model averaging, BMUF).
    caf::reacts_to<messages::shadow_msg>,
    // Syncer g was lost (from the coordinator): no longer awaited.
    caf::reacts_to<messages::leave_atom, std::uint32_t>,
    // Self-messages: the next round; a round's deadline.
    caf::reacts_to<messages::step_atom>,
    caf::reacts_to<messages::tick_atom, std::uint64_t>,
    // What it did, as a JSON object (rounds, sync gap, bytes, ...).
    caf::replies_to<messages::stats_atom>::with<std::string>,
    // A checkpoint (shadow_run.cpp), from its owner's node only: start no
    // new round; answers the round under way, or the last one.
    caf::replies_to<messages::pause_atom>::with<std::uint64_t>,
    // Then: run the rounds up to round r (the latest any syncer answered;
    // S-EASGD: its own), have its members and shards receive what it sent
    // (a flush each), answer.
    caf::replies_to<messages::pause_atom,
                    std::uint64_t>::with<messages::ack_atom>,
    // Its state between rounds (encode(shadow_syncer_saved),
    // shadow_state.hpp).
    caf::replies_to<messages::save_atom>::with<std::string>,
    // The checkpoint is written or abandoned: rounds go on.
    caf::reacts_to<messages::resume_atom>,
    // S-EASGD: shard k, lost with its node, was restored with this handle
    // (from its owner's node only).
    caf::reacts_to<messages::rebind_atom, std::uint32_t, caf::actor>>;

/// S-EASGD: a syncer's pushes to the center carry the id of worker
/// shadow_syncer_ids + its index (above every worker's; the shard keeps
/// per-sender sequence numbers).
constexpr messages::worker_id shadow_syncer_ids = 1u << 30;

/// A syncer's view of its workers: the correction it sends them (handled by
/// the worker's ShadowSync policy, make_shadow_policy) and the parameters
/// it reads (core).
using shadow_member_actor = caf::typed_actor<
    // A correction, added to the parameters.
    caf::reacts_to<messages::delta_msg>,
    // The worker's parameters (the round's snapshot).
    caf::replies_to<messages::fetch_msg>::with<messages::params_msg>>;

/// Settings of one syncer.
struct shadow_syncer_config {
  std::uint32_t index = 0;
  /// Its workers (the trainers it synchronizes) and their ranks.
  std::vector<shadow_member_actor> members;
  std::vector<messages::worker_id> ids;
  /// S-EASGD: the shards holding the center.
  std::vector<actors::shard_ref> shards;
  optim::shadow_options opts;
  std::uint32_t workers = 1; ///< in the whole job
  /// BMUF: the initial parameters (w_g = w_0 = init).
  std::shared_ptr<const std::vector<float>> init;
  caf::duration timeout{std::chrono::seconds{60}};
  /// The node whose actors may pause, save and resume it (the
  /// coordinator's); unset: this process only.
  caf::node_id owner;
  /// A resumed job: the state to start from (shadow_state.hpp, checked
  /// with check_fits before the spawn).
  std::shared_ptr<const shadow_syncer_saved> state;
};

/// The state of a shadow syncer.
struct shadow_syncer_state {
  static inline const char* name = "shadow_syncer";
  shadow_syncer_config config;
  std::vector<caf::actor> peers; ///< the syncers, by index
  std::vector<bool> member_live, peer_live;
  std::uint64_t round = 0;
  bool in_round = false, exchanging = false;
  /// This round's snapshots and the members' step counts at them.
  std::vector<std::vector<float>> snapshots;
  std::vector<bool> have;
  std::vector<std::uint64_t> steps_at, last_steps;
  std::vector<std::uint64_t> versions; ///< S-EASGD: the shards' versions
  /// S-EASGD: the center's fetch under way (its number; answers to an
  /// earlier one are dropped) and whether one is.
  std::uint64_t center_fetch = 0;
  bool fetching_center = false;
  std::vector<float> center;
  /// MA / BMUF: the syncers' sums of round r, by syncer index.
  std::map<std::uint64_t, std::map<std::uint32_t, messages::shadow_msg>> inbox;
  std::optional<optim::bmuf_state> bmuf;
  // Counters.
  std::uint64_t rounds = 0, timeouts = 0, corrections = 0, messages = 0,
                bytes = 0, steps_between = 0;
  /// S-EASGD: pushes sent to the center (each to every shard).
  std::uint64_t pushes = 0;
  double seconds_in_rounds = 0;
  actors::time_point round_start;
  actors::probe_ref probe;
  // A checkpoint's pause: no round starts beyond `drain_to`; `drained`
  // answers once round drain_to is over and flushed. `timer` is set while
  // a step_atom is on its way (one chain of rounds at a time).
  bool paused = false, timer = false;
  std::uint64_t drain_to = 0;
  std::optional<caf::typed_response_promise<messages::ack_atom>> drained;
  /// S-EASGD: a flush to shard k under way settles as done when shard k is
  /// restored meanwhile (the lost shard cannot answer; the restored one
  /// holds none of this syncer's pushes since the checkpoint). Empty: none.
  std::vector<std::function<void()>> flush_waits;
};

/// Spawn with `sys.spawn(shadow_syncer, config)`; rounds start with the
/// peers message.
shadow_syncer_actor::behavior_type
shadow_syncer(shadow_syncer_actor::stateful_pointer<shadow_syncer_state> self,
              shadow_syncer_config config);

/// S-EASGD's alpha and BMUF's eta_b with their defaults resolved.
double shadow_alpha(const optim::shadow_options& o,
                    std::uint32_t workers) noexcept;
double shadow_block_momentum(const optim::shadow_options& o,
                             std::uint32_t workers) noexcept;

// -- configured from the job (shadow_roles.cpp) ---------------------------

/// The configuration of ShadowSync syncer g of a job whose syncers do `opts`
/// over the workers of its group (`members`, in rank order) and the shards
/// (S-EASGD). The members' ranks (ids, for reports) are left to the caller.
shadow_syncer_config syncer_config_of(const actors::job_config& job,
                                      const optim::shadow_options& opts,
                                      std::uint32_t g,
                                      std::vector<actors::worker_actor> members,
                                      std::vector<actors::shard_ref> shards);

} // namespace troupe::algos
