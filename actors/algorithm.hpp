// An algorithm as the shared roles see it: the one seam between the
// coordinator, the worker, the shards, the node agent and the report on one
// side and an algorithm (algos/<name>/) on the other. The shared roles never
// look at an algorithm's name; they ask it.
//
// An algorithm object is built once per job (from the command line, from
// the job spec a node receives, or by an application) and shared, const, by
// every role of the job in a process. It holds its own settings (job_config
// holds only the shared ones); its hooks read them. What it decides per job:
//   - the shard plan: none, asynchronous, synchronous or a center;
//   - each shard's and each worker's settings (the worker's communication
//     policy above all, comm_policy.hpp);
//   - how the coordinator treats the workers (peers exchanged before the
//     start, workers that linger after their last step, whether a lost
//     worker's steps go to the survivors, warm start, clock tracking);
//   - the coordinator-side part of a run (algorithm_run): the algorithm's
//     own roles, its reaction to steps and losses, its final figures;
//   - its section of the final JSON.

#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <nlohmann/json.hpp>

#include "actors/interfaces.hpp"
#include "optim/range_table.hpp"

namespace troupe::optim {
struct compress_options;
} // namespace troupe::optim

namespace troupe::actors {

struct job_config;
struct coordinator_state;
struct worker_config;
struct parameter_shard_config;
struct shard_ref;
struct resume_point;

/// The coordinator as an algorithm's run sees it.
using coordinator_ptr = coordinator_actor::stateful_pointer<coordinator_state>;

/// How an algorithm uses parameter-server shards.
enum class shard_plan {
  none,   ///< no shards: the workers hold the model (LSGD, SGP, ...)
  async,  ///< each push applied on arrival (Downpour, SSP)
  sync,   ///< a round's pushes combined, then applied once (sync)
  center, ///< the shards hold a center the workers move (EASGD)
};

/// The coordinator-side part of one job's run: the algorithm's own roles
/// (LSGD's leaders, ShadowSync's syncers) and its reactions to the job. One
/// per job, owned by the coordinator; every hook runs on its thread. The
/// defaults do nothing.
class algorithm_run {
public:
  virtual ~algorithm_run() = default;

  /// Once the shards and workers exist: spawns the algorithm's own roles
  /// (here or on the workers' nodes), then calls `ready`, or ends the job
  /// with detail::placement_failed.
  virtual void provision(coordinator_ptr self, std::function<void()> ready);

  /// The actor whose fetch answers the evaluated model; null: the shards'
  /// (with shards) or the mean of the workers' models (without).
  virtual caf::actor evaluation_source() const;

  /// Groups led by the algorithm's roles: a leader event of group
  /// groups() is the global leader's.
  virtual std::uint32_t groups() const noexcept;

  /// The job's workers took `total` steps in all (after every step).
  virtual void on_steps(coordinator_ptr self, std::uint64_t total);

  /// A monitored actor went down; true if it was one of the algorithm's
  /// roles (then handled).
  virtual bool on_down(coordinator_ptr self, const caf::down_msg& msg);

  /// The workers are done or stopped: collects the roles' final figures,
  /// then calls `done` (once).
  virtual void finish(coordinator_ptr self, std::function<void()> done);

  /// The job is over: stops the roles this process hosts.
  virtual void stop(coordinator_ptr self);

  /// Shard i, lost with its node, came back from a checkpoint with handle
  /// `h` (coordinator_restore.cpp; algorithm::restores_shards): the roles
  /// that push to it or fetch from it are told. The default tells every
  /// live worker (its policy's rebind_atom handler, actors/shard_fetch.hpp);
  /// the coordinator tells the evaluator.
  virtual void shard_restored(coordinator_ptr self, std::size_t i,
                              const caf::actor& h);

  /// The pushes the run's roles (not the workers) sent to the shards, each
  /// to every shard, by sender id: with the workers' counts, the pushes a
  /// restored shard lost. False if a role's count is not known (it did not
  /// report). The default: none, true.
  virtual bool
  pushes_sent(std::map<messages::worker_id, std::uint64_t>& sent) const;

  /// Adds the run's figures to the final JSON; `messages` and `bytes` are
  /// the job's totals, to which the roles' own traffic is added.
  virtual void report(const coordinator_state& st, nlohmann::json& out,
                      std::uint64_t& messages, std::uint64_t& bytes) const;

  // -- checkpoints (issue [11], coordinator_checkpoint.cpp) -----------------

  /// The run's files of a checkpoint by name: `algo-<role>-<i>.state`, each
  /// a state file (optim/state_file.hpp).
  using state_files = std::map<std::string, std::string>;

  /// A checkpoint begins, before the workers are asked to pause: the roles
  /// finish what they have under way that involves the workers (a round
  /// and its messages), start nothing new until resume(), then `done` is
  /// called with an empty string, or with the reason to abandon the
  /// checkpoint. The default calls it at once.
  virtual void quiesce(coordinator_ptr self,
                       std::function<void(std::string)> done);

  /// Every worker paused and answered its state: the roles' own states
  /// (asked with the job's request timeout), then `done(files, "")`, or
  /// `done({}, reason)` naming the role that did not answer. Called after
  /// quiesce() only. The default: no files.
  virtual void save(coordinator_ptr self,
                    std::function<void(state_files, std::string)> done);

  /// The checkpoint was written or abandoned (after quiesce()): the roles
  /// go on. The default does nothing.
  virtual void resume(coordinator_ptr self);

  /// A resumed job, once, before provision(): the roles it spawns start
  /// from `from`'s files (save()'s). Throws optim::data_error naming a
  /// file that is missing or does not fit. The default does nothing.
  virtual void restore(const resume_point& from);

protected:
  /// One of the run's roles asked for its state by save_roles().
  struct saved_role {
    caf::actor handle;
    std::string file; ///< its file in the checkpoint
    std::string name; ///< what an error calls it ("LSGD group leader 1")
  };

  /// save()'s usual body: asks every role for its state (save_atom, the
  /// job's request timeout) and calls `done(files, "")` once all answered,
  /// or `done({}, reason)` naming the first that did not. No roles: done at
  /// once with no files.
  static void save_roles(coordinator_ptr self, std::vector<saved_role> roles,
                         std::function<void(state_files, std::string)> done);
};

/// An algorithm's behavior in a job (see the top of this file). Options and
/// flags are the algorithm's own business (algos/); the shared roles see
/// only this.
class algorithm {
public:
  virtual ~algorithm() = default;

  /// The name in reports, logs and `--algo` ("downpour").
  virtual std::string name() const = 0;

  /// How the job uses parameter shards.
  virtual shard_plan plan(const job_config& job) const = 0;

  /// Throws std::invalid_argument naming the first setting that cannot run
  /// in `job` (checked before any actor is spawned).
  virtual void check(const job_config& job) const;

  /// The ranges of the flat parameter vector the job's `job.shards` shards
  /// hold, in order, contiguous from 0. The default: balanced_split of the
  /// whole vector (a pipeline aligns them to its stages' slices).
  virtual std::vector<optim::slice> shard_ranges(const job_config& job) const;

  /// Adjusts shard i's settings (the center's plain addition, a round's
  /// aggregation rule). The default leaves the job's.
  virtual void configure_shard(const job_config& job,
                               parameter_shard_config& config) const;

  /// Fills in worker w's communication policy and pacing; `shards` are the
  /// job's shards as the worker reaches them (empty without shards).
  virtual void configure_worker(const job_config& job, worker_config& config,
                                std::vector<shard_ref> shards) const = 0;

  /// The workers get each other's handles (peers_atom) before the start.
  virtual bool peer_to_peer() const noexcept;

  /// The ranks worker w of a peer-to-peer job ever exchanges with, in
  /// increasing order, w left out: it gets their handles (and only theirs)
  /// and is told when one of them is lost. The relation must be symmetric
  /// (w lists v if and only if v lists w). The default: every other worker.
  virtual std::vector<messages::worker_id>
  peer_ranks(const job_config& job, messages::worker_id w) const;

  /// A worker of this peer-to-peer job may exchange with any other, a few
  /// at a time (DS-Sync's random groups): instead of peer_ranks' handles,
  /// every worker gets one table of all handles, shared by the workers of a
  /// process (messages::handle_table), and is told of every loss; its
  /// policy keeps state only for the peers it meets. The default: false.
  virtual bool any_peer(const job_config& job) const;

  /// Workers stay alive after their last step, answering fetches, until
  /// the job ends (their models are the evaluated ones).
  virtual bool lingers() const noexcept;

  /// The job's state can be checkpointed and resumed: its workers'
  /// policies save and load their state (comm_policy::save), and its run
  /// its roles' (algorithm_run::save, restore). The default: false.
  virtual bool checkpointable() const noexcept;

  /// Why checkpointable() is false, for the refusal of --checkpoint-dir.
  virtual std::string checkpoint_refusal() const;

  /// A lost worker's remaining steps (and examples) go to the survivors
  /// (asynchronous algorithms); false: they are lost (synchronous rounds).
  virtual bool reassigns_steps() const noexcept;

  /// A shard lost with its node comes back from the latest checkpoint (in
  /// the coordinator's process) and the job goes on: the workers' policies
  /// wait after a failed fetch for the shard's new handle (rebind_atom;
  /// actors/shard_fetch.hpp) and count their pushes (worker_stats::pushes,
  /// for the pushes lost). The default: the asynchronous parameter server
  /// (plan() == async).
  virtual bool restores_shards(const job_config& job) const;

  /// Its shards may have hot backups (--shard-replicas=1): each shard
  /// applies its pushes on arrival and forwards them to its backup, and the
  /// workers keep their recent pushes (job_config::policy.replay) to send
  /// them again to a backup that took over. The default: the asynchronous
  /// parameter server without clocks (plan() == async, no staleness bound).
  virtual bool replicates_shards(const job_config& job) const;

  /// Why replicates_shards() is false, for the refusal of --shard-replicas.
  virtual std::string replica_refusal(const job_config& job) const;

  /// A node may join the running job (elastic scale-up): new workers, each
  /// with steps and examples the live workers cede (cede_atom), fetch the
  /// current parameters and train like the others. Only for algorithms
  /// whose workers need nothing but their steps, their examples and the
  /// shards (no peers, no clocks, no roles of their own per worker). The
  /// default: false (a joining node is refused, naming the algorithm).
  virtual bool elastic(const job_config& job) const noexcept;

  /// Worker 0 trains alone for this many steps before the others start
  /// (Downpour's warm start); 0 (the default): all start together.
  virtual std::uint64_t warm_start_steps() const noexcept;

  /// The shards count the workers' clocks (synchronous rounds, a staleness
  /// bound).
  virtual bool tracks_clocks(const job_config& job) const noexcept;

  /// The compression of the job's messages, for the report; null: none.
  virtual const optim::compress_options*
  compression(const job_config& job) const noexcept;

  /// The coordinator-side part of a run (a fresh one per job).
  virtual std::unique_ptr<algorithm_run> start(const job_config& job) const;

  /// An algorithm with a driver of its own (Sandblaster) runs the whole job
  /// in `sys` and returns its final JSON; nullopt (the default): the
  /// coordinator runs it.
  virtual std::optional<nlohmann::json> run(caf::actor_system& sys,
                                            const job_config& job,
                                            std::chrono::seconds timeout) const;

  /// Adds the algorithm's settings section (and figures) to the final JSON.
  virtual void report(const coordinator_state& st, nlohmann::json& out) const;

  /// Adds the algorithm's figures of one worker to its entry in the final
  /// JSON's worker_stats.
  virtual void report_worker(const messages::worker_stats& stats,
                             nlohmann::json& out) const;
};

/// A job's algorithm, shared by its roles.
using algorithm_ptr = std::shared_ptr<const algorithm>;

} // namespace troupe::actors
