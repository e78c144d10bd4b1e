#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/duration.hpp>
#include <caf/node_id.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/clock.hpp"
#include "actors/interfaces.hpp"
#include "actors/probe.hpp"
#include "optim/aggregate.hpp"
#include "optim/shard_store.hpp"

namespace troupe::actors {

/// How a shard applies pushes.
enum class shard_mode {
  /// Downpour: every push is applied when it arrives (algorithms.md §1);
  /// with a staleness bound, fetches wait as SSP requires (§11).
  async,
  /// Synchronous all-reduce over the shards (§12): the pushes of one clock
  /// from every tracked worker are combined by the aggregation rule (by
  /// default averaged, weighted by their sample counts, summed in worker
  /// order, so the result does not depend on arrival order) and applied as
  /// one step; this is the reduce-scatter, and the fetches that wait for the
  /// step are the all-gather.
  sync,
};

/// Settings of one shard.
struct parameter_shard_config {
  std::uint32_t index = 0; ///< shard number, for logs and statistics
  optim::slice range;      ///< the shard's part of the flat vector
  /// Initial values of the whole flat vector (only `range` is read).
  std::shared_ptr<const std::vector<float>> init;
  optim::shard_store_options store; ///< server optimizer and rates
  shard_mode mode = shard_mode::async;
  /// SSP bound s (async mode): a fetch at clock c is answered once every
  /// tracked worker has clock >= c - s. None: fully asynchronous.
  std::optional<std::uint64_t> staleness_bound;
  /// Sync mode: how a round's pushes are combined, by the name of a rule of
  /// optim/aggregate.hpp ("mean": weighted by sample counts).
  std::string aggregation = "mean";
  /// The rule's settings (Byzantine-robust rules, optim/robust.hpp).
  optim::rule_options rules;
  /// Async mode, buffered rounds (a robust rule on Downpour's shards,
  /// actors/detail/shard_buffer.hpp): a round of at most one push per
  /// worker is combined by the rule once `buffer` workers pushed, or a
  /// worker has `max_backlog` pushes waiting, or at the first message after
  /// `buffer_deadline`. 0: every push is applied as it comes.
  std::uint32_t buffer = 0;
  std::chrono::milliseconds buffer_deadline{1000};
  /// A checkpoint's state of this shard to start from (save_shard's bytes);
  /// null: `init`.
  std::shared_ptr<const std::string> state;
  /// Sync mode, restored from `state` into a running job (its node was
  /// lost): a push for a later round than the next one moves the shard's
  /// round there. The rounds between (and any partial one) are skipped for
  /// this shard's range: their pushes are lost, and counted so by the
  /// coordinator's report.
  bool catch_up = false;
  /// The node allowed to ask for the shard's state (the coordinator's;
  /// none: this process only).
  caf::node_id owner;
  /// Set: this shard is the hot backup of that primary (--shard-replicas),
  /// and takes the primary's state and forwarded pushes from it alone.
  caf::actor_addr primary;
  /// Timeout of the shard's own requests (to its backup).
  caf::duration request_timeout{std::chrono::seconds{60}};
};

/// A fetch waiting for other workers (SSP or sync).
struct pending_fetch {
  messages::fetch_msg request;
  caf::typed_response_promise<messages::params_msg> promise;
  /// The requester's node if in another process (its reply may travel
  /// through shared memory), else none.
  caf::node_id remote;
};

/// One worker's contribution to a synchronous step.
struct sync_contribution {
  std::uint32_t samples = 0; ///< 0: rejected push, contributes nothing
  messages::tensor values;
};

/// A push waiting in a buffered round (async mode with a robust rule).
struct buffered_push {
  std::uint64_t seq = 0;
  std::uint64_t version = 0; ///< the parameters' version it was computed on
  std::uint32_t samples = 0;
  messages::tensor values;
};

/// The state of a parameter_shard actor.
struct parameter_shard_state {
  static inline const char* name = "parameter_shard";
  /// The shard's actor (its clock times the buffered rounds).
  const caf::local_actor* self = nullptr;
  parameter_shard_config config;
  std::unique_ptr<optim::shard_store<float>> store;
  /// Clock of every tracked worker (SSP and sync).
  std::map<messages::worker_id, std::uint64_t> clocks;
  /// At least the largest clock in `clocks` (kept wherever one is set, never
  /// lowered): with it below a round's clock, every tracked worker owes the
  /// round its push.
  std::uint64_t clocks_max = 0;
  std::vector<pending_fetch> waiting;
  /// Sync mode: contributions by clock, then by worker.
  std::map<std::uint64_t, std::map<messages::worker_id, sync_contribution>>
      rounds;
  /// Async buffered rounds: each worker's pushes waiting, oldest first (the
  /// round is the front of each), when the round began, rounds combined.
  std::map<messages::worker_id, std::deque<buffered_push>> pending;
  time_point round_began{};
  std::uint64_t buffered_rounds = 0;
  /// Sync mode and buffered rounds: the aggregation rule and its scratch.
  std::unique_ptr<optim::aggregation_rule> rule;
  std::vector<optim::contribution> parts;
  std::vector<float> sum;
  std::uint64_t max_clock_gap = 0;
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;
  std::uint64_t non_finite = 0;
  std::uint64_t bad_range = 0;
  /// Pushes rejected, and rounds a worker's push was discarded by the rule.
  std::map<messages::worker_id, messages::worker_pushes> rejected;
  probe_ref probe;
  /// Started from a checkpoint's state, no push applied since: the first
  /// one is logged (the end of a restore, for bench/shard_recovery).
  bool awaiting_first_push = false;
  /// A primary's hot backup (attached by the coordinator), to which every
  /// push received is forwarded after it was handled; null: none.
  parameter_shard_actor backup;
  /// Pushes forwarded to the backup; replicated messages refused (a backup
  /// takes them from its primary only).
  std::uint64_t forwarded = 0, refused = 0;
  /// Flow control of the forwarding (shard_replica.cpp): flushes asked of
  /// the backup and not yet answered, what was forwarded since the last one
  /// asked, and the backup's attachment (answers to an earlier one are
  /// ignored).
  std::uint32_t unacked = 0;
  std::uint32_t pushes_since_flush = 0;
  std::uint64_t bytes_since_flush = 0;
  std::uint64_t backup_epoch = 0;
  /// A backup took a push straight from a worker: its primary is gone and
  /// it serves in its place (logged once, for bench/shard_recovery).
  bool serving = false;
};

/// What a store reports to stats_atom: its range, version and staleness,
/// each worker's pushes applied and duplicated (with the `rejected` ones),
/// and the values' hash. The caller adds who it is and its own counters.
messages::shard_stats
store_stats(const optim::shard_store<float>& store,
            std::map<messages::worker_id, messages::worker_pushes> rejected
            = {});

/// Spawn with `sys.spawn(parameter_shard, config)`.
parameter_shard_actor::behavior_type parameter_shard(
    parameter_shard_actor::stateful_pointer<parameter_shard_state> self,
    parameter_shard_config config);

} // namespace troupe::actors
