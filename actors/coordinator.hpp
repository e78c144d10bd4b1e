#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>
#include <nlohmann/json.hpp>

#include "actors/algorithm.hpp"
#include "actors/clock.hpp"
#include "actors/comm_policy.hpp"
#include "actors/evaluator.hpp"
#include "actors/events.hpp"
#include "actors/interfaces.hpp"
#include "actors/monitor.hpp"
#include "actors/parameter_shard.hpp"
#include "actors/stop_request.hpp"
#include "actors/worker.hpp"
#include "optim/shard_store.hpp"

namespace troupe::actors {

/// A snapshot of a running job, for progress displays.
struct job_progress {
  std::uint64_t steps = 0;   ///< total over workers
  std::uint64_t samples = 0; ///< total over workers
  double fraction = 0;       ///< of the step budget
  double loss = 0;           ///< smoothed training loss
  double accuracy = -1;      ///< last test accuracy (-1: none yet)
  double seconds = 0;
};

/// Where the roles of a distributed job run. With no nodes, every role runs
/// in the coordinator's process.
struct placement_plan {
  std::vector<node_actor> nodes;         ///< the joined nodes' agents
  std::vector<std::string> node_names;   ///< host:pid of each node
  std::vector<std::int32_t> shard_node;  ///< per shard: node index, -1: here
  std::vector<std::int32_t> worker_node; ///< per worker: node index, -1: here
  /// Per shard, with hot replicas: its backup's node index, -1: here.
  std::vector<std::int32_t> backup_node;
  bool empty() const noexcept {
    return nodes.empty();
  }
  /// The node index of worker w / shard i (-1: this process).
  std::int32_t worker_at(std::size_t w) const noexcept {
    return w < worker_node.size() ? worker_node[w] : -1;
  }
  std::int32_t shard_at(std::size_t i) const noexcept {
    return i < shard_node.size() ? shard_node[i] : -1;
  }
  std::int32_t backup_at(std::size_t i) const noexcept {
    return i < backup_node.size() ? backup_node[i] : -1;
  }
  /// Node n's name, or `here` for -1.
  std::string name_of(std::int32_t n, const std::string& here) const {
    return n < 0 ? here : node_names.at(static_cast<std::size_t>(n));
  }
};

/// The job's state at a checkpoint: the roles' files by name
/// ("shard-0.state", "worker-3.state") and the coordinator's progress.
struct resume_point {
  std::string path; ///< where it was read from, for messages
  std::map<std::string, std::string> files;
  nlohmann::json progress;
};

/// When and where checkpoints are written: the coordinator pauses every
/// worker at its next step boundary, collects the workers' and the shards'
/// states and hands them to `write` with its progress, then resumes them.
struct checkpoint_settings {
  /// Writes one checkpoint and returns where (throws on failure: the job
  /// goes on and reports it); empty: no checkpoints.
  std::function<std::string(std::uint64_t steps, const resume_point& state)>
      write;
  std::uint64_t every_steps = 0; ///< > 0: every so many steps of the job
  double every_seconds = 60;     ///< else every so many seconds
};

/// Everything a job is made of. The coordinator spawns the shards, the
/// workers and the evaluator from it. The settings of one algorithm (its
/// groups, periods, local optimizer, ...) are not here: they are members of
/// the algorithm object (algos/<name>/), resolved by its build().
struct job_config {
  /// The algorithm (algos/registry.hpp makes the built-in ones by name);
  /// required. Its shard plan says whether the job has shards (shards = 0
  /// for shard_plan::none).
  algorithm_ptr algorithm;
  std::uint32_t workers = 1;
  std::uint32_t shards = 1;
  /// Hot backups per shard (0 or 1; asynchronous shards without a staleness
  /// bound): a primary's loss costs no update (coordinator_replica.cpp).
  std::uint32_t shard_replicas = 0;
  /// Initial flat parameter vector (shared by every shard).
  std::shared_ptr<const std::vector<float>> init;
  /// Builds worker w's replica over its own data.
  std::function<std::unique_ptr<optim::replica>(messages::worker_id)>
      make_replica;
  /// Worker w's minibatches without a model (the source make_replica draws
  /// from), for roles that hand them to a model held elsewhere; empty where
  /// the data is not in memory (a data directory's files).
  std::function<optim::batch_source(messages::worker_id)> batches;
  /// Steps each worker takes before it is done.
  std::uint64_t steps_per_worker = 0;
  /// Evaluates the shards' parameters; may be empty.
  evaluate_fn evaluate;
  /// Total worker steps between evaluations (0: only at the end).
  std::uint64_t eval_every_steps = 0;
  double target_accuracy = 0; ///< 0: none
  double max_seconds = 0;     ///< 0: no limit
  /// Ends the job from outside (a signal), as the time limit does; its
  /// reason becomes the stop reason. May be null.
  std::shared_ptr<stop_request> stop;
  /// The shared parameter-server worker policy (the algorithms whose
  /// workers push to shards: Downpour, sync).
  ps_policy_options policy;
  /// The shards' store: optimizer, rate schedule, histogram.
  optim::shard_store_options server;
  caf::duration request_timeout{std::chrono::seconds{60}};
  /// A worker whose gradient is non-finite this many steps in a row (the
  /// shards reject every such push) has diverged: it fails, naming itself,
  /// and the job ends with the error. 0: never.
  std::uint32_t divergence_steps = 8;
  /// Run each worker on a thread of its own, so its steps never hold a
  /// scheduler thread. Needed when a worker computes several steps without
  /// waiting for a reply (n_fetch > 1): on the shared scheduler it would
  /// keep its thread that long and delay the shards and the coordinator. A
  /// worker that fetches every step releases its thread every step, and is
  /// faster on the scheduler (no thread wake-ups per reply: on mlp with 2
  /// workers 146k against 108k samples/s).
  bool detached_workers = false;
  /// Called on the coordinator's thread after steps (final = evaluation or
  /// end); may be empty.
  std::function<void(const job_progress&, bool final)> on_progress;
  /// Optional hooks for tests and monitoring.
  std::vector<std::shared_ptr<std::atomic<std::uint64_t>>> step_counters;
  std::vector<std::chrono::microseconds> step_delays;
  std::shared_ptr<std::vector<float>> final_params;
  /// Workers known to be Byzantine (--byzantine: attacks the job stages
  /// itself): the evaluation of a job without shards averages the other
  /// workers' models (an attacker's own model is not what the job trained).
  std::vector<messages::worker_id> byzantine;
  /// Where the roles run (distributed jobs); empty: all here.
  placement_plan placement;
  /// Reassigns a lost worker's data (asynchronous algorithms); may be empty,
  /// then the survivors only take over its steps.
  adopt_fn adopt_data;
  /// Builds the replica of a worker that joined the running job, over the
  /// examples the live workers ceded (elastic algorithms); empty: no node
  /// may join.
  std::function<std::unique_ptr<optim::replica>(
      messages::worker_id, const std::vector<std::uint64_t>& examples)>
      make_joined_replica;
  /// Distributed jobs: the join service (net/registrar.hpp), told the
  /// coordinator's handle when training starts (elastic_atom) so nodes may
  /// join the running job; null: none.
  caf::actor join_service;
  /// At most this many workers join a running job in all (each joining node
  /// gets at most its worker slots, within what is left).
  std::uint32_t max_joined_workers = 16;
  /// Application hooks: steps, evaluations, failures, the end (events.hpp).
  std::vector<std::shared_ptr<job_observer>> observers;
  /// Monitoring: the coordinator polls every node's monitor (its own and
  /// the placed nodes') each `monitor_interval` and keeps the picture here;
  /// null: no polling (probes still count).
  std::shared_ptr<cluster_view> monitor;
  std::chrono::milliseconds monitor_interval{500};
  /// This process's name in the monitor's view (host:pid).
  std::string node_name = "local";
  /// Checkpoints (issue [11]); no writer: none. See checkpoint_settings.
  checkpoint_settings checkpoints;
  /// A checkpoint to continue from; null: a fresh job.
  std::shared_ptr<const resume_point> resume;
};

/// A role that stopped before the job ended (its node died or hung).
struct failure_record {
  std::string role; ///< "worker" or "shard"
  std::uint32_t index = 0;
  std::string node;   ///< where it ran
  std::string reason; ///< CAF's exit reason
  double seconds = 0; ///< since the job started
  /// When, in milliseconds since the Unix epoch (actors::unix_ms: the
  /// system clock; in a simulation, its virtual clock's).
  std::int64_t unix_ms = 0;
  std::uint64_t steps_done = 0;       ///< the lost worker's completed steps
  std::uint64_t steps_reassigned = 0; ///< per survivor (the largest share)
  std::vector<std::uint32_t> reassigned_to;
  /// Steps it still owed that no live worker could take (lost for good).
  std::uint64_t steps_unassigned = 0;
};

/// A node that joined the running job (elastic scale-up).
struct joined_node {
  std::string node;                    ///< host:pid
  std::vector<std::uint32_t> workers;  ///< the ids of its workers
  double seconds = 0;                  ///< since the job started
  std::uint64_t steps_at_join = 0;     ///< the job's steps then
  std::uint64_t steps = 0;             ///< ceded by the live workers
  std::uint64_t examples = 0;          ///< ceded by the live workers
  std::vector<std::uint32_t> ceded_by; ///< the workers that ceded
};

/// A shard brought back from the latest checkpoint after its node was lost.
struct restored_shard {
  std::uint32_t index = 0;
  std::string node;                   ///< where it was lost
  std::uint64_t checkpoint_steps = 0; ///< the job's steps at the checkpoint
  std::uint64_t steps_at_loss = 0;    ///< the job's steps when it was lost
  double seconds = 0;                 ///< since the job started, at the loss
  /// "checkpoint" (spawned from the latest one) or "replica" (its hot
  /// backup took over).
  std::string from = "checkpoint";
  std::string to; ///< where it runs now
};

/// Where every planned step went: steps_planned = steps_done + steps_lost.
struct step_ledger {
  std::uint64_t planned = 0; ///< workers * steps_per_worker
  std::uint64_t done = 0;    ///< taken by any worker, lost ones included
  std::uint64_t lost = 0;    ///< unassigned + not_taken
  std::uint64_t done_by_lost_workers = 0;
  /// Steps handed from a lost worker (or one whose hand-over came too late)
  /// to other workers.
  std::uint64_t reassigned = 0;
  /// Owed by lost workers with no live worker left to take them.
  std::uint64_t unassigned = 0;
  /// Assigned to live workers but not taken: the job stopped first (time
  /// limit, target, stop request, an error).
  std::uint64_t not_taken = 0;
};

/// The state of a coordinator actor.
struct coordinator_state {
  static inline const char* name = "coordinator";
  job_config config;
  std::vector<shard_ref> shards;
  std::vector<worker_actor> workers;
  std::vector<bool> started, live, shard_lost;
  /// Per worker: known gone (its down message, or its node was lost);
  /// the end of the job does not wait for it.
  std::vector<bool> gone;
  /// Per worker: the steps it is to take (its own, plus steps handed over
  /// from lost workers); after a loss, the steps it took.
  std::vector<std::uint64_t> quota;
  std::uint64_t steps_unassigned = 0, steps_reassigned = 0;
  /// A truthful note on a partial completion (no error): what was lost.
  std::string warning;
  bool provisioned = false;
  std::optional<std::string> pending_finish; ///< asked during provisioning
  std::vector<failure_record> failures;
  std::vector<std::uint64_t> worker_steps;
  std::vector<messages::worker_stats> worker_reports;
  std::vector<messages::shard_stats> shard_reports;
  evaluator_actor eval;
  time_point t0; ///< the job's start, on the coordinator's clock
  double train_end = 0;
  std::uint64_t total_steps = 0, total_samples = 0, next_eval = 0;
  double smooth_loss = 0, last_loss = 0;
  bool eval_pending = false, finishing = false, reached = false;
  std::optional<double> seconds_to_target;
  messages::eval_msg last_eval;
  bool have_eval = false;
  nlohmann::json evaluations = nlohmann::json::array();
  std::string stop_reason, error;
  std::optional<std::string> result;
  std::vector<caf::typed_response_promise<std::string>> waiting;
  /// Nodes yet to acknowledge the stop: the result waits for them, so that
  /// the stop is out before this process may exit.
  std::size_t nodes_stopping = 0;
  probe_ref probe;
  /// The algorithm's part of the run (its own roles), from
  /// config.algorithm->start().
  std::unique_ptr<algorithm_run> run;
  /// Checkpoints: one under way, the last one's steps and time, what was
  /// written (for the report), a finish waiting for the one under way.
  bool checkpointing = false, stop_checkpointed = false;
  std::uint64_t checkpoint_steps = 0;
  time_point checkpoint_time, checkpoint_began;
  nlohmann::json checkpoint_log = nlohmann::json::array();
  std::optional<std::string> finish_after_checkpoint;
  /// While a checkpoint waits for worker w's pause: settles it as failed
  /// (the worker finished or was lost; a remote one would never answer).
  std::vector<std::function<void(const std::string&)>> pause_waits;
  /// The shards' files of the latest checkpoint written (or resumed from)
  /// and its steps: a shard whose node is lost comes back from them.
  std::vector<std::shared_ptr<const std::string>> shard_states;
  std::uint64_t shard_states_steps = 0;
  /// The shards restored so far, for the report.
  std::vector<restored_shard> restored;
  /// Hot replicas: each shard's backup (null: none, lost or promoted).
  std::vector<parameter_shard_actor> backups;
  /// Backups started but not yet attached to their primary: the end stops
  /// them too (a primary lost during the attach never answers for them).
  std::vector<caf::actor> attaching;
  /// Nodes that joined the running job (coordinator_join.cpp); a join under
  /// way (one at a time) and the steps ceded for it, not yet placed.
  std::vector<joined_node> joined;
  bool joining = false;
  std::uint64_t join_steps_pending = 0;
  /// The cluster monitor (config.monitor set): told of joined nodes.
  caf::actor cluster_monitor;
};

/// How the reason a coordinator sends its nodes with stop_atom begins when
/// the job failed (the nodes then exit non-zero).
inline const std::string failed_prefix = "failed: ";

/// Whether a node's stop reason says the job failed.
inline bool job_failed(const std::string& stop_reason) {
  return stop_reason.compare(0, failed_prefix.size(), failed_prefix) == 0;
}

/// Spawn with `sys.spawn(coordinator, config)`; ask it for `result_atom`.
coordinator_actor::behavior_type
coordinator(coordinator_actor::stateful_pointer<coordinator_state> self,
            job_config config);

/// Where worker w / shard i runs, for reports ("local" in this process).
std::string worker_node_name(const coordinator_state& st, std::size_t w);
std::string shard_node_name(const coordinator_state& st, std::size_t i);

/// The final JSON of a finished job (detail of the coordinator); without
/// `final_eval` (no evaluation behind it) the test accuracy and loss are null.
nlohmann::json job_report(const coordinator_state& st,
                          const messages::eval_msg* final_eval);

/// The exact step ledger of a job, from the coordinator's state.
step_ledger ledger_of(const coordinator_state& st);

} // namespace troupe::actors
