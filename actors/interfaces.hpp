#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/message.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "messages/atoms.hpp"
#include "messages/compressed.hpp"
#include "messages/control.hpp"
#include "messages/join.hpp"
#include "messages/messages.hpp"
#include "messages/metrics.hpp"

// The typed interfaces of every troupe role, in one header because the roles
// name each other (a worker reports to the coordinator, which spawns the
// workers). The message flow of each algorithm is documented in
// docs/actors.md.

namespace troupe::actors {

/// A parameter-server shard: one contiguous range of the flat parameter
/// vector (parameter_shard.hpp).
using parameter_shard_actor = caf::typed_actor<
    // A worker's gradient for the shard's range; applied or rejected.
    caf::reacts_to<messages::push_msg>,
    // The same, compressed (decoded by the shard).
    caf::reacts_to<messages::compressed_push_msg>,
    // The shard's parameters; under a staleness bound or in synchronous mode
    // the answer waits for the other workers' clocks.
    caf::replies_to<messages::fetch_msg>::with<messages::params_msg>,
    // Count worker w, starting at clock c, in the clock bookkeeping.
    caf::reacts_to<messages::track_atom, messages::worker_id, std::uint64_t>,
    // Stop waiting for worker w.
    caf::reacts_to<messages::untrack_atom, messages::worker_id>,
    // Statistics: versions, staleness, per-worker pushes and rejections.
    caf::replies_to<messages::stats_atom>::with<messages::shard_stats>,
    // A worker's earlier pushes are all received (answered in order after
    // them, as CAF delivers one sender's messages): the shard's version.
    caf::replies_to<messages::flush_atom>::with<std::uint64_t>,
    // The shard's whole state (a checkpoint, optim/state_file.hpp); from
    // the coordinator's node only.
    caf::replies_to<messages::save_atom>::with<std::string>,
    // Hot replicas (--shard-replicas): attach a backup (from the
    // coordinator's node; the primary sends it its state, then forwards
    // every push it receives), true once the backup holds the state.
    caf::replies_to<messages::replicate_atom, caf::actor>::with<bool>,
    // A backup: its primary's state, then its primary's pushes (from the
    // primary only).
    caf::replies_to<messages::replicate_atom, std::string>::with<bool>,
    caf::reacts_to<messages::replicate_atom, messages::push_msg>,
    caf::reacts_to<messages::replicate_atom, messages::compressed_push_msg>>;

/// A worker's core: what every algorithm's worker handles (worker.hpp). The
/// worker is dynamically typed inside: an algorithm's own messages are
/// handled by its communication policy (comm_policy::handlers), and their
/// senders address the worker through a typed view of only those messages
/// (each algorithm's own, in its folder under algos/), made with
/// caf::actor_cast.
using worker_actor = caf::typed_actor<
    // Start training at the given clock.
    caf::reacts_to<messages::start_atom, std::uint64_t>,
    // Self-message: take the next step.
    caf::reacts_to<messages::step_atom>,
    // Take share k of m of lost worker w's examples and `steps` more steps
    // (asynchronous algorithms, after a node failure).
    caf::reacts_to<messages::adopt_atom, messages::worker_id, std::uint32_t,
                   std::uint32_t, std::uint64_t>,
    // Stop now (sent with high priority) and report.
    caf::replies_to<messages::stop_atom>::with<messages::worker_stats>,
    // The replica's parameters in [offset, offset + size) (the evaluator of
    // a job without shards reads the leader's this way).
    caf::replies_to<messages::fetch_msg>::with<messages::params_msg>,
    // The ranks it exchanges with and their handles, before the start
    // (peer-to-peer algorithms: the worker monitors them and tells its
    // policy); from the coordinator's node only.
    caf::reacts_to<messages::peers_atom, messages::peer_list_msg>,
    // Peer w finished its steps or was lost (from the peer or the
    // coordinator's loss handling): no longer a target nor awaited.
    caf::reacts_to<messages::leave_atom, messages::worker_id>,
    // Self-message: a policy's wait reached its deadline.
    caf::reacts_to<messages::tick_atom, std::uint64_t>,
    // Pause at the next step boundary (its pushes received by the shards)
    // and answer the worker's whole state (a checkpoint); from the
    // coordinator's node only.
    caf::replies_to<messages::pause_atom>::with<std::string>,
    // Go on after a pause.
    caf::reacts_to<messages::resume_atom>,
    // A node joins the job: give up num/den of the remaining steps and of
    // the worker's examples, taken among those not drawn yet this epoch;
    // answered with what was given up (elastic algorithms; from the
    // coordinator's node only).
    caf::replies_to<messages::cede_atom, std::uint32_t,
                    std::uint32_t>::with<messages::cede_msg>>;

/// Evaluates the shards' parameters on the test set (evaluator.hpp).
using evaluator_actor = caf::typed_actor<
    // Evaluate; with `true` fetch the current parameters first, with `false`
    // re-evaluate the last fetched ones (used after a divergence, so the
    // result is the last good model).
    caf::replies_to<messages::eval_atom, bool>::with<messages::eval_msg>,
    // Averaging the workers: worker w was lost, leave it out from now on.
    caf::reacts_to<messages::leave_atom, messages::worker_id>,
    // Shard i was restored (its node lost): read it from this handle.
    caf::reacts_to<messages::rebind_atom, std::uint32_t,
                   parameter_shard_actor>>;

/// Builds a job's actors, drives warm start, evaluation and stopping, and
/// produces the final result (coordinator.hpp).
using coordinator_actor = caf::typed_actor<
    // A worker finished a step.
    caf::reacts_to<messages::progress_msg>,
    // A worker finished all its steps, or failed (stats.error not empty).
    caf::reacts_to<messages::done_atom, messages::worker_stats>,
    // Stop the job now (time limit, user request).
    caf::reacts_to<messages::stop_atom>,
    // The final result as a JSON text, answered when the job has ended.
    caf::replies_to<messages::result_atom>::with<std::string>,
    // LSGD: group g's leader is now the named worker (the n-th change); the
    // coordinator tells the job's observers.
    caf::reacts_to<messages::leader_atom, std::uint32_t, std::string,
                   std::uint64_t>,
    // A node joined the running job (the registrar, after its checks and
    // setup): place workers on its agent, answering how many (or why not,
    // errc::join_refused). This process only.
    caf::replies_to<messages::join_atom, messages::hello_msg,
                    caf::actor>::with<std::uint32_t>>;

/// A node's agent: hosts shards and workers of a remote coordinator's job
/// (node_agent.hpp). Handles cross the wire as caf::actor, a built-in type.
using node_actor = caf::typed_actor<
    // Build the job from its spec (JSON text); answer its fingerprint, which
    // must equal the coordinator's (same model, seed and data).
    caf::replies_to<messages::setup_atom, std::string>::with<std::string>,
    // Spawn the role registered under this name (role_registry.hpp: the
    // shared "shard" and "worker", an algorithm's own, or a user's own) with
    // these arguments; answer its handle. An unknown
    // role or arguments of the wrong types: errc::unknown_role,
    // errc::bad_arguments.
    caf::replies_to<messages::spawn_atom, std::string,
                    caf::message>::with<caf::actor>,
    // The job is over (the reason is logged): stop every hosted actor and
    // quit.
    caf::reacts_to<messages::stop_atom, std::string>,
    // The node's actors' metrics (answered by the node's monitor).
    caf::replies_to<messages::metrics_atom>::with<messages::node_metrics>>;

} // namespace troupe::actors
