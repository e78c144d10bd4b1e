#pragma once

#include <caf/atom.hpp>

// Atoms for verbs that carry no data of their own. CAF 0.17 limits an atom to
// 10 characters (caf::atom static_asserts it). Atoms need no registration:
// CAF serializes them as built-in atom_value.

namespace troupe::messages {

/// Acknowledges an applied push.
using ack_atom = caf::atom_constant<caf::atom("ack")>;

/// Asks a peer to echo a message back (tests, liveness checks).
using echo_atom = caf::atom_constant<caf::atom("echo")>;

/// Asks an actor or node to shut down cleanly.
using stop_atom = caf::atom_constant<caf::atom("stop")>;

/// Starts a worker (carries its starting clock under a staleness bound).
using start_atom = caf::atom_constant<caf::atom("start")>;

/// A worker's self-message: take the next training step.
using step_atom = caf::atom_constant<caf::atom("step")>;

/// Asks for an actor's statistics.
using stats_atom = caf::atom_constant<caf::atom("stats")>;

/// Tells a shard to count a worker in its clock bookkeeping (SSP, sync).
using track_atom = caf::atom_constant<caf::atom("track")>;

/// Tells a shard to stop waiting for a worker (finished or lost).
using untrack_atom = caf::atom_constant<caf::atom("untrack")>;

/// Asks the evaluator for an evaluation of the shards' parameters.
using eval_atom = caf::atom_constant<caf::atom("eval")>;

/// A worker's notice that it has finished its steps.
using done_atom = caf::atom_constant<caf::atom("done")>;

/// Asks the coordinator for the job's final result.
using result_atom = caf::atom_constant<caf::atom("result")>;

/// A node's request to take part in a job (carries its hello_msg).
using join_atom = caf::atom_constant<caf::atom("join")>;

/// Tells a node the job it takes part in (carries the job's spec).
using setup_atom = caf::atom_constant<caf::atom("setup")>;

/// Asks a node to spawn a role (followed by shard_atom or worker_atom).
using spawn_atom = caf::atom_constant<caf::atom("spawn")>;

/// Names the parameter-shard role.
using shard_atom = caf::atom_constant<caf::atom("shard")>;

/// Names the worker role.
using worker_atom = caf::atom_constant<caf::atom("worker")>;

/// Gives a worker a share of a lost worker's data and steps.
using adopt_atom = caf::atom_constant<caf::atom("adopt")>;

/// Asks for the members of a cluster once enough have joined.
/// Asks a node monitor for its actors' metrics.
using metrics_atom = caf::atom_constant<caf::atom("metrics")>;

/// A periodic self-message (the cluster monitor's poll).
using tick_atom = caf::atom_constant<caf::atom("tick")>;

/// Asks a worker for its leader score (LSGD).
using score_atom = caf::atom_constant<caf::atom("score")>;

/// Triggers a leader round (LSGD); carries the job's total step count.
using round_atom = caf::atom_constant<caf::atom("round")>;

/// A group's leader changed (to the coordinator, for the job's observers).
using leader_atom = caf::atom_constant<caf::atom("leader")>;

using members_atom = caf::atom_constant<caf::atom("members")>;

/// The handles of a job's peers in rank order (SGP and DS-Sync workers,
/// ShadowSync's syncers), sent before the start.
using peers_atom = caf::atom_constant<caf::atom("peers")>;

/// A peer finished its steps and leaves the gossip (carries its rank).
using leave_atom = caf::atom_constant<caf::atom("leave")>;

/// Sandblaster L-BFGS (actors/lbfgs_shard.hpp, messages/lbfgs.hpp): set or
/// read the evaluation point; a portion to compute (driver to worker); sum
/// a pass; form the new (s, y) pair; keep it in the history ring.
using point_atom = caf::atom_constant<caf::atom("point")>;
using grad_atom = caf::atom_constant<caf::atom("grad")>;
using sum_atom = caf::atom_constant<caf::atom("sum")>;
using accept_atom = caf::atom_constant<caf::atom("accept")>;
using keep_atom = caf::atom_constant<caf::atom("keep")>;

/// Asks a node to spawn a Sandblaster L-BFGS role (after spawn_atom, before
/// shard_atom or worker_atom).
using lbfgs_atom = caf::atom_constant<caf::atom("lbfgs")>;

/// Asks a node to spawn a shadow syncer (after spawn_atom).
using shadow_atom = caf::atom_constant<caf::atom("shadow")>;

/// Checkpoints (issue [11]): pause a worker at its next step boundary and
/// answer its state; resume it; a shard's state; a worker's pushes all
/// received by a shard (answered in order after them).
using pause_atom = caf::atom_constant<caf::atom("pause")>;
using resume_atom = caf::atom_constant<caf::atom("resume")>;
using save_atom = caf::atom_constant<caf::atom("save")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
/// Shard i was restored elsewhere (a lost node's, from its checkpoint):
/// the coordinator gives the workers and the evaluator its new handle.
using rebind_atom = caf::atom_constant<caf::atom("rebind")>;
/// Hot shard replicas (--shard-replicas): a primary's backup attached, its
/// state sent, and every push the primary receives forwarded to it.
using replicate_atom = caf::atom_constant<caf::atom("replicate")>;

/// A node joins a running job (elastic scale-up): a live worker cedes part
/// of its remaining steps and undrawn examples (answered with a cede_msg);
/// the registrar tells the coordinator its handle (elastic_atom) and hands
/// it each node that joins late (join_atom).
using cede_atom = caf::atom_constant<caf::atom("cede")>;
using elastic_atom = caf::atom_constant<caf::atom("elastic")>;

} // namespace troupe::messages
