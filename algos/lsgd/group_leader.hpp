#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/typed_event_based_actor.hpp>
#include <nlohmann/json.hpp>

#include "actors/interfaces.hpp"
#include "actors/probe.hpp"
#include "algos/lsgd/lsgd_policy.hpp"
#include "messages/consensus.hpp"

// LSGD's group leader (algorithms.md §4): on each local round it asks its
// workers for their scores, elects the lowest (ties to the lowest rank) and
// tells the leader to send its parameters to the others, who pull toward
// them when they arrive. Nobody stops training for it; a member or leader
// that does not answer within the timeout is left out of the round.

namespace troupe::algos {

struct group_leader_saved;

/// LSGD's group leader: elects its group's leader and has it send its
/// parameters to the group.
using group_leader_actor = caf::typed_actor<
    // Run round r: collect scores, elect, and (if the flag is set) have the
    // leader broadcast with lambda. Answers the elected leader's score (for
    // the global election), or an error if no member answered.
    caf::replies_to<messages::round_atom, std::uint64_t,
                    bool>::with<messages::score_msg>,
    // Its state for a checkpoint (encode(group_leader_saved),
    // lsgd_state.hpp), from the coordinator's process only.
    caf::replies_to<messages::save_atom>::with<std::string>>;

/// What the leader actors did, for the job's report. Shared by the group
/// leaders, the leader board and the coordinator (all in the coordinator's
/// process), hence the lock.
struct lsgd_record {
  struct group {
    std::int64_t leader = -1; ///< current leader's worker id (-1: none yet)
    double score = 0;         ///< its score when elected
    std::uint64_t changes = 0;
    std::uint64_t rounds = 0;  ///< completed broadcasts
    std::uint64_t skipped = 0; ///< rounds without a broadcast
    std::uint64_t absent = 0;  ///< members that did not answer for a score
  };
  std::mutex mtx;
  std::vector<group> groups;
  std::int64_t global_leader = 0;
  std::uint64_t global_changes = 0;
  std::uint64_t global_rounds = 0;
  std::uint64_t global_skipped = 0;
  std::uint64_t busy_skipped = 0; ///< triggers displaced while one waited
  std::uint64_t messages = 0;     ///< sent by the leader actors
  std::uint64_t bytes = 0;
  std::vector<std::string> log; ///< the last leader changes, readable

  /// The report's "leaders" object.
  nlohmann::json to_json();
  /// Total leader changes (every group's and the global leader's).
  std::uint64_t changes();
  void count(std::uint64_t bytes);
  /// Keeps `what` among the last 32 changes; call with mtx held.
  void note_change(std::string what);
};

/// Settings of one group leader.
struct group_leader_config {
  std::uint32_t group = 0;
  std::vector<messages::worker_id> ids;   ///< the members' ranks
  std::vector<lsgd_member_actor> members; ///< in the same order
  double lambda = 0.1;                    ///< local pull strength
  caf::duration timeout{std::chrono::seconds{10}};
  std::shared_ptr<lsgd_record> record;
  /// Told of leader changes (for the job's observers); may be null.
  actors::coordinator_actor coordinator;
  /// A resumed job: the state to start from (lsgd_state.hpp).
  std::shared_ptr<const group_leader_saved> state;
};

struct group_leader_state {
  static inline const char* name = "group_leader";
  group_leader_config config;
  std::int64_t leader = -1;
  bool busy = false;
  actors::probe_ref probe;
};

/// Spawn with `sys.spawn(group_leader, config)`.
group_leader_actor::behavior_type
group_leader(group_leader_actor::stateful_pointer<group_leader_state> self,
             group_leader_config config);

} // namespace troupe::algos
