#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/duration.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/message_handler.hpp>

#include "actors/clock.hpp"
#include "actors/interfaces.hpp"
#include "actors/probe.hpp"
#include "optim/aggregate.hpp"
#include "optim/compress.hpp"
#include "optim/consensus.hpp"
#include "optim/optimizer.hpp"
#include "optim/range_table.hpp"
#include "optim/replica.hpp"
#include "optim/schedule.hpp"
#include "optim/state_file.hpp"

namespace troupe::actors {

/// A caf::duration as a std::chrono duration (delayed_send takes only
/// those).
inline std::chrono::steady_clock::duration to_chrono(const caf::duration& d) {
  std::chrono::steady_clock::time_point t{};
  t += d;
  return t.time_since_epoch();
}

/// A shard as a worker sees it: its handle and its range.
struct shard_ref {
  parameter_shard_actor handle;
  optim::slice range;
};

/// What a communication policy may use of its worker. The worker's training
/// step (replica::compute) is the same for every algorithm; the policy
/// decides whom the worker talks to, when, and what it does with the replies.
class worker_context {
public:
  virtual ~worker_context() = default;

  /// The worker's id.
  virtual messages::worker_id id() const noexcept = 0;

  /// The actor, for sends and requests (replies run on the actor's thread).
  /// Dynamically typed: its behavior is the core (worker_actor) composed
  /// with the policy's handlers (worker.hpp).
  virtual caf::event_based_actor* self() noexcept = 0;

  /// The replica and its gradient buffer.
  virtual optim::replica& replica() noexcept = 0;

  /// Steps completed by this worker since it started.
  virtual std::uint64_t steps() const noexcept = 0;

  /// The worker's clock: its starting clock plus steps().
  virtual std::uint64_t clock() const noexcept = 0;

  /// Timeout of every request.
  virtual caf::duration request_timeout() const noexcept = 0;

  /// Counts one sent message of kind `t` and `bytes` bytes.
  virtual void count_sent(msg_type t, std::uint64_t bytes) noexcept = 0;

  /// The worker's probe (may be null): policies count the replies they
  /// handle with on_message(probe(), self(), ...).
  virtual actor_probe* probe() noexcept = 0;

  /// Counts time spent waiting for replies.
  virtual void count_wait(std::uint64_t nanoseconds) noexcept = 0;

  /// Ends the worker with an error (reported to the coordinator).
  virtual void fail(std::string reason) = 0;

  /// Peer-to-peer policies: the policy's on_timeout(seq) runs after the
  /// request timeout unless the worker has ended.
  virtual void schedule_timeout(std::uint64_t seq) = 0;

  /// The worker finished its steps (or was stopped).
  virtual bool finished() const noexcept = 0;

  /// The steps the worker takes in all (it may be given more, or cede
  /// some, while it runs). The default: no end.
  virtual std::uint64_t max_steps() const noexcept {
    return ~std::uint64_t{0};
  }

  /// Counts an applied share / group average / correction, or a wait that
  /// ended at its timeout.
  virtual void count_mix() noexcept = 0;
  virtual void count_timeout() noexcept = 0;

  /// Whether the message being handled comes from the job's coordinator
  /// (its process, or the worker's own): the only one a policy obeys when
  /// told where its peers or shards are. The default: no one.
  virtual bool from_coordinator() noexcept {
    return false;
  }
};

/// Records the rate of the worker's local step (the probe's "lr" gauge: the
/// dashboard's learning-rate chart).
void note_lr(worker_context& ctx, double lr);

/// The swappable communication part of a worker. Both hooks are
/// continuation-passing: they may answer at once or after replies arrive,
/// and must call their continuation exactly once unless they call fail().
class comm_policy {
public:
  virtual ~comm_policy() = default;

  /// Before a step computes: e.g. fetch parameters. Call `ready` when the
  /// replica may compute.
  virtual void before_compute(worker_context& ctx, std::function<void()> ready)
      = 0;

  /// After the gradient is in ctx.replica().grads() (mean over `samples`
  /// examples): e.g. push it, apply it locally. Call `done` when the step is
  /// complete.
  virtual void after_compute(worker_context& ctx, std::uint32_t samples,
                             std::function<void()> done)
      = 0;

  /// The handlers of the algorithm's own messages (the worker's core,
  /// worker_actor, handles the rest): composed after the core with
  /// or_else, so they run on the worker's thread like the core's. Each
  /// handler counts its message with on_message(ctx.probe(), ctx.self(),
  /// ...). The default handles nothing.
  virtual caf::message_handler handlers(worker_context& ctx);

  /// A step completed with this mean loss (before its report is sent).
  virtual void on_step(worker_context&, double /*loss*/) {}

  // -- peer-to-peer algorithms (SGP, DS-Sync); the defaults ignore ----------

  /// The handles of the ranks this worker exchanges with (its algorithm's
  /// peer_ranks, increasing; a null handle: gone), before the start.
  virtual void on_peers(worker_context&,
                        const std::vector<messages::worker_id>& /*ranks*/,
                        const std::vector<caf::actor>& /*handles*/) {}

  /// Or, for an algorithm with any_peer, every worker's handle by rank (the
  /// worker's own among them; a null handle: gone), before the start.
  virtual void on_peer_table(worker_context&, const messages::handle_table&) {}

  /// Peer `rank` finished or died: no longer a target, no longer awaited.
  virtual void on_peer_gone(worker_context&, messages::worker_id) {}

  /// A deadline set with ctx.schedule_timeout(seq) passed.
  virtual void on_timeout(worker_context&, std::uint64_t) {}

  /// The worker finished its steps or was stopped (it may linger).
  virtual void on_finish(worker_context&) {}

  /// The push-sum weight to report (SGP), NaN for others.
  virtual double weight() const noexcept;

  /// Adds the policy's own figures to the worker's report (compression).
  virtual void add_stats(messages::worker_stats&) const {}

  /// Whether the worker's own compute() is the step's work, reported to a
  /// time model (actors/clock.hpp). False where other actors compute the
  /// step (a pipeline's head: its stages report their shares).
  virtual bool computes_step() const noexcept {
    return true;
  }

  // -- checkpoints (issue [11]) ---------------------------------------------

  /// A checkpoint's pause is asked for: whether the worker may pause here,
  /// at its step boundary (or in its wait before a step's computation). If
  /// not, it takes its next step and is asked again at the next boundary
  /// (all-reduce: its workers first agree on the step to pause after). The
  /// default: here.
  virtual bool pause_here(worker_context&) {
    return true;
  }

  /// The coordinator's resume: the checkpoint was written or given up
  /// (its pause may not have come here yet). The default does nothing.
  virtual void on_resume(worker_context&) {}

  /// The worker pauses between two steps for a checkpoint: make sure what
  /// it sent has been received where it counts (the parameter-server
  /// policy: every shard answered a flush after its pushes), then call
  /// `done`. The default calls it at once.
  virtual void quiesce(worker_context& ctx, std::function<void()> done);

  /// The policy's state between two steps (counters, buffers, residuals),
  /// names prefixed with `prefix`. The default throws std::logic_error: the
  /// algorithm cannot be checkpointed.
  virtual void save(optim::state_writer& w, const std::string& prefix) const;

  /// Reads what save() wrote; throws optim::data_error naming the tensor.
  virtual void load(const optim::state_reader& r, const std::string& prefix);
};

/// Settings of the parameter-server policy (Downpour, SSP, sync).
struct ps_policy_options {
  /// Fetch every n_fetch steps (Downpour; 1 under SSP and sync).
  std::uint64_t n_fetch = 1;
  /// Push the accumulated gradient every n_push steps (Downpour; 1 under
  /// SSP and sync).
  std::uint64_t n_push = 1;
  /// Asynchronous only (Downpour without a staleness bound): the fetch a
  /// step needs is sent when the step before it starts, so it is in flight
  /// while that step computes and pushes; a step then computes on the
  /// parameters of one fetch earlier (one step staler, without its own
  /// previous push).
  bool prefetch = false;
  /// Synchronous: push every step and wait for the averaged step; no local
  /// update.
  bool sync = false;
  /// Local optimizer and rate for the replica between fetches (Downpour's
  /// alpha_local); a rate of 0 disables the local update.
  optim::optimizer_options local_optimizer;
  double local_lr = 0;
  /// Gradient compression of the pushes (none by default), with the model's
  /// layers (their kinds pick the per-kind settings; empty: all fully
  /// connected).
  optim::compress_options compress;
  std::vector<optim::named_range> layers;
  /// Pushes kept per shard to send again after the shard's handle changed
  /// (push_log; --shard-replicas: 64, sync: the last one); 0: none. Capped
  /// so the log holds at most 32 MiB of a worker's pushes; nothing is kept
  /// for a shard in the worker's own process.
  std::size_t replay = 0;
};

/// The parameter-server policy: fetch from every shard (waiting for the
/// replies), compute, apply locally at the local rate, push the slices of
/// the accumulated gradient to their shards.
std::unique_ptr<comm_policy> make_ps_policy(std::vector<shard_ref> shards,
                                            ps_policy_options opts,
                                            std::size_t parameters);

/// Fetches every shard's range into `dest` (the model's flat vector) and
/// each shard's version into `versions`; calls `done` once all answered
/// (the wait is counted), or fails the worker naming the shard. `dest` and
/// `versions` must outlive the requests (a policy's own members).
/// With `on_error`: a failed fetch from shard i calls on_error(i, reason)
/// instead of failing the worker. With `cancelled`: once *cancelled is
/// true, replies and errors are ignored (the fetch was started again).
/// Without `count_wait` the fetch's time is not counted as the worker's
/// wait (a prefetch: the policy counts what the step waited). With `kept`
/// (one tensor per shard, outliving the requests) instead of `dest`: each
/// reply's values are kept there as they came (in a shared-memory segment
/// on this host: copied once, when the policy copies them out).
void fetch_all(worker_context& ctx, const std::vector<shard_ref>& shards,
               float* dest, std::vector<std::uint64_t>& versions,
               std::function<void()> done,
               std::function<void(std::size_t, std::string)> on_error = {},
               std::shared_ptr<const bool> cancelled = {},
               bool count_wait = true,
               std::vector<messages::tensor>* kept = nullptr);

/// A worker's recent pushes to each shard (hot replicas): after a shard's
/// handle changed (its backup took over) they are sent again, and the
/// shard's de-duplication by (worker, seq) drops those it already has, so
/// a push the lost primary took but did not forward is not lost.
class push_log {
public:
  /// Keeps up to `capacity` pushes per shard of `shards`.
  push_log(std::size_t shards, std::size_t capacity);

  /// Keeps `m` as shard i's newest push (the oldest goes past capacity).
  void keep(std::size_t i, caf::message m);

  /// Sends shard i's kept pushes, oldest first, to `to`; returns how many.
  std::size_t resend(worker_context& ctx, std::size_t i,
                     const caf::actor& to) const;

  std::size_t capacity() const noexcept {
    return capacity_;
  }

  /// The capacity for `replay` pushes of a model of `parameters` values
  /// (each push is the whole vector, split over the shards): at most
  /// 32 MiB of pushes, and at least 4.
  static std::size_t capacity_for(std::size_t replay,
                                  std::size_t parameters) noexcept;

private:
  std::vector<std::deque<caf::message>> sent_;
  std::size_t capacity_;
};

/// Sends each shard its range of `values` as a push_msg with sequence number
/// `seq`, the shard's last fetched version and the samples behind it. With
/// `compressors` (one per shard) as a compressed_push_msg instead.
/// With `kept`: each shard's message is also kept there (the shard's
/// recent pushes, sent again after a rebind_atom).
void push_all(worker_context& ctx, const std::vector<shard_ref>& shards,
              const float* values, std::uint64_t seq,
              const std::vector<std::uint64_t>& versions, std::uint32_t samples,
              std::vector<optim::compressor>* compressors = nullptr,
              push_log* kept = nullptr);

/// Local steps only, with the given optimizer and rate.
std::unique_ptr<comm_policy>
make_local_policy(optim::optimizer_options optimizer, double lr,
                  std::size_t parameters,
                  std::optional<optim::schedule_options> schedule = {});

/// Adds a compressor's byte counters (per layer kind) to a worker's report.
void add_compression(messages::worker_stats& out, const optim::compressor& c);

/// Settings of the peer-to-peer policies (SGP, DS-Sync).
struct peer_policy_options {
  std::uint32_t workers = 1;
  /// The ranks this worker exchanges with (the algorithm's peer_ranks for
  /// it, increasing): its peer state is kept for these only.
  std::vector<messages::worker_id> neighbours;
  /// Or any worker may be a peer (the algorithm's any_peer): no
  /// neighbours, and a table of every worker's handle comes instead.
  bool any_peer = false;
  /// The workers' optimizer and rate (schedule: over their own steps).
  optim::optimizer_options optimizer;
  double lr = 0.01;
  std::optional<optim::schedule_options> schedule;
  /// SGP: out-peers per step on the exponential graph (1 or 2).
  std::uint32_t peers = 1;
  /// SGP: a step waits only for in-peer shares more than `overlap` steps
  /// old (0: every step's shares before the next step).
  std::uint64_t overlap = 0;
  /// DS-Sync: group size m; the digit schedule if workers is a power of m,
  /// else random partitions from `seed`.
  std::uint32_t group_size = 2;
  std::uint64_t seed = 1;
  /// SGP: compress the shares (none by default): each sender keeps, per
  /// out-peer, the copy of its model that peer holds, starting from `init`
  /// (every worker's starting point), and sends the compressed change.
  optim::compress_options compress;
  std::vector<optim::named_range> layers;
  std::shared_ptr<const std::vector<float>> init;
  /// Compressed SGP's consensus step in (0, 1]: the share sent each step
  /// is gamma / (d + 1) of the public copy (and of w).
  double gamma = 0.5;
  /// Robust mixing (issue [15], optim/robust_mix.hpp): the rule that
  /// combines a DS-Sync group's models ("mean": the exact group mean), or
  /// "cclip" for SGP's clipped gossip; with its settings.
  std::string mix_rule = "mean";
  optim::rule_options mix_options;
};

} // namespace troupe::actors
