#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include <caf/system_messages.hpp>

#include "actors/clock.hpp"
#include "actors/coordinator.hpp"

// The coordinator's steps, shared by its source files: coordinator.cpp (the
// behavior, evaluation, stopping and the report) and coordinator_roles.cpp
// (spawning or placing the roles, and losing them).

namespace troupe::actors::detail {

using actors::coordinator_ptr;

/// Shards count workers' clocks (sync, or downpour under a staleness bound).
bool tracks_clocks(const job_config& c);

/// Spawns every role here or on its node (asynchronous with nodes), then
/// calls begin().
void provision(coordinator_ptr self);

/// Spawns the evaluator once the workers and the algorithm's own roles
/// exist (its model: algorithm_run::evaluation_source(), the shards', or
/// the mean of the workers').
void spawn_evaluator(coordinator_ptr self);
/// A role could not be placed: the job ends before it started.
void placement_failed(coordinator_ptr self, const std::string& what);
/// Monitors the roles and starts the workers; the job's clock starts here.
void begin(coordinator_ptr self);
/// Spawns the node and cluster monitors (config.monitor set), linked.
void start_monitoring(coordinator_ptr self);

/// Starts worker w at the given clock (once).
void start_worker(coordinator_ptr self, std::size_t w, std::uint64_t clock);

/// Ends the job (stop workers, collect statistics, evaluate, report).
void finish(coordinator_ptr self, std::string reason);

/// Sends the result to whoever asked for it, stops every role and node.
void deliver(coordinator_ptr self, std::string text);

/// A monitored role went down: a lost worker's data and steps go to the
/// survivors (asynchronous algorithms); a lost shard ends the job.
void on_down(coordinator_ptr self, const caf::down_msg& msg);

/// Worker w reported done after `steps` of its larger quota (a hand-over
/// reached it after its last step): the rest goes to the live workers, or is
/// counted unassigned.
void hand_back(coordinator_ptr self, std::size_t w, std::uint64_t steps);

/// True once no worker is live.
bool all_workers_done(const coordinator_state& st);

/// Checkpoints (coordinator_checkpoint.cpp): writes one if it is due (after
/// a step).
void maybe_checkpoint(coordinator_ptr self);

/// Writes a checkpoint now if one can be taken (every worker started, none
/// finished or lost), then calls `then`; true if it began.
bool checkpoint(coordinator_ptr self, std::function<void()> then);

/// Worker w finished or was lost: a checkpoint waiting for its pause is
/// abandoned now rather than at the request timeout.
void checkpoint_worker_gone(coordinator_ptr self, std::size_t w,
                            const std::string& why);

/// Whether shards lost with their node can come back from the latest
/// checkpoint (asynchronous shards, one written or resumed from).
bool shards_restorable(const coordinator_state& st);

/// Shard i's node was lost: spawns it here from the latest checkpoint and
/// points the workers and the evaluator at it (coordinator_restore.cpp).
void restore_shard(coordinator_ptr self, std::size_t i,
                   const std::string& node);

/// Points the workers (or the algorithm's roles, algorithm_run::
/// shard_restored) and the evaluator at shard i's new handle `h`
/// (coordinator_restore.cpp).
void rebind(coordinator_ptr self, std::size_t i, const caf::actor& h);

/// Points every live worker at shard i's new handle `h`.
void rebind_workers(coordinator_ptr self, std::size_t i, const caf::actor& h);

/// Hot replicas (coordinator_replica.cpp): spawns and attaches each shard's
/// backup, then calls `then` (or ends the job with placement_failed).
void provision_backups(coordinator_ptr self, std::function<void()> then);

/// Shard i's primary was lost on `node`: its backup, if any, takes over
/// (false: none).
bool fail_over(coordinator_ptr self, std::size_t i, const std::string& node);

/// The actor at `source` was shard `index`'s backup (now forgotten, its
/// primary told to stop forwarding).
bool backup_down(coordinator_ptr self, const caf::actor_addr& source,
                 std::size_t& index);

/// Where shard i's backup runs (host:pid, or "local").
std::string backup_node_of(const coordinator_state& st, std::size_t i);

/// The report's "replicas": per shard, where its backup runs, whether it
/// holds the primary's parameters at the end, or that it took over.
nlohmann::json replicas_report(const coordinator_state& st);

/// The report's "restored_shards": per restored shard, the pushes lost
/// (the workers' pushes less those the restored shard counted).
nlohmann::json restored_report(const coordinator_state& st,
                               const std::vector<messages::shard_stats>& shards,
                               const std::vector<messages::worker_stats>& ws);

/// A resumed job: the coordinator's progress from config.resume.
void restore_progress(coordinator_ptr self);

/// A node joined the running job (coordinator_join.cpp): the live workers
/// cede part of their steps and undrawn examples, the node's workers take
/// them; answers how many workers it hosts, or errc::join_refused with the
/// reason (an algorithm that is not elastic, the job finishing, the cap).
caf::result<std::uint32_t> join(coordinator_ptr self, messages::hello_msg hello,
                                caf::actor agent);

/// The report's "joined": per joined node its workers, when, and what the
/// live workers ceded to them.
nlohmann::json joined_report(const coordinator_state& st);

} // namespace troupe::actors::detail
