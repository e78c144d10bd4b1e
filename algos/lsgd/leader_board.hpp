#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/typed_event_based_actor.hpp>

#include "actors/interfaces.hpp"
#include "actors/probe.hpp"
#include "algos/lsgd/group_leader.hpp"
#include "optim/consensus.hpp"

// LSGD's global coordinator (algorithms.md §4): the job's coordinator tells
// it the total step count T; when T reaches a multiple of workers * tau it
// runs a local round in every group, and when T reaches a multiple of
// workers * tau_G (after the local round) it elects the global leader among
// the groups' leaders and has it send its parameters to every worker. A new
// trigger while a round is under way waits for it (one waits: the latest
// global one if any, so no global round is lost to a slow local one). It also
// serves the global leader's parameters, the model the job evaluates.

namespace troupe::algos {

struct leader_board_saved;

/// LSGD's global coordinator: triggers the rounds from the job's step count,
/// elects the global leader and serves its parameters.
using leader_board_actor = caf::typed_actor<
    // The job's total step count reached T (sent every workers * tau steps).
    caf::reacts_to<messages::round_atom, std::uint64_t>,
    // The global leader's parameters (forwarded to it): the evaluated model.
    caf::replies_to<messages::fetch_msg>::with<messages::params_msg>,
    // A checkpoint (from the coordinator's process only): start no round
    // and answer once the one under way is over (its pulls applied); its
    // state (encode(leader_board_saved), lsgd_state.hpp); go on (a trigger held
    // meanwhile runs).
    caf::replies_to<messages::pause_atom>::with<messages::ack_atom>,
    caf::replies_to<messages::save_atom>::with<std::string>,
    caf::reacts_to<messages::resume_atom>>;

struct leader_board_config {
  optim::lsgd_options opts;
  std::vector<lsgd_member_actor> workers; ///< by rank
  std::vector<group_leader_actor> groups;
  caf::duration timeout{std::chrono::seconds{10}};
  std::shared_ptr<lsgd_record> record;
  actors::coordinator_actor coordinator; ///< told of global leader changes
  /// A resumed job: the state to start from (lsgd_state.hpp).
  std::shared_ptr<const leader_board_saved> state;
};

struct leader_board_state {
  static inline const char* name = "leader_board";
  leader_board_config config;
  std::vector<bool> live;
  std::uint32_t global_leader = 0;
  bool busy = false;
  /// Paused for a checkpoint; its answer while a round ends; the latest
  /// trigger held meanwhile (0: none).
  bool paused = false;
  std::optional<caf::typed_response_promise<messages::ack_atom>> pause_reply;
  std::uint64_t held = 0;
  actors::probe_ref probe;
};

/// Spawn with `sys.spawn(leader_board, config)`.
leader_board_actor::behavior_type
leader_board(leader_board_actor::stateful_pointer<leader_board_state> self,
             leader_board_config config);

/// Which rounds the step count T triggers: a local round when T is a
/// multiple of workers * tau (unless tau_G == tau with several groups:
/// then only the global one), a global round when it is a multiple of
/// workers * tau_G and there are several groups (one group: its leader is
/// the global leader).
struct round_kinds {
  bool local = false;
  bool global = false;
};
round_kinds rounds_at(std::uint64_t total_steps, std::uint32_t workers,
                      const optim::lsgd_options& opts) noexcept;

/// The groups of `workers` workers: `groups` contiguous blocks of ranks
/// (sizes differ by at most one), or by node when `node_of` is given (one
/// group per distinct node, in order of first appearance).
std::vector<std::uint32_t>
lsgd_groups(std::uint32_t workers, std::uint32_t groups,
            const std::vector<std::int32_t>& node_of);

} // namespace troupe::algos
