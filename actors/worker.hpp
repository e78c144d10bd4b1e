#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <caf/typed_event_based_actor.hpp>

#include "actors/comm_policy.hpp"
#include "actors/interfaces.hpp"
#include "optim/consensus.hpp"
#include "optim/replica.hpp"

namespace troupe::actors {

/// Adds share k of m of lost worker `lost`'s examples to a replica; returns
/// the number of examples added.
using adopt_fn
    = std::function<std::size_t(optim::replica&, messages::worker_id lost,
                                std::uint32_t k, std::uint32_t m)>;

/// Settings of one worker.
struct worker_config {
  messages::worker_id id = 0;
  /// Builds the replica (model and data shard) inside the worker.
  std::function<std::unique_ptr<optim::replica>()> make_replica;
  /// Builds the communication policy for a replica of n parameters.
  std::function<std::unique_ptr<comm_policy>(std::size_t n)> make_policy;
  /// Receives progress and the final report; may be null (tests).
  coordinator_actor coordinator;
  /// Steps to take before reporting done.
  std::uint64_t max_steps = 0;
  /// Timeout of every request the worker makes.
  caf::duration request_timeout{std::chrono::seconds{60}};
  /// Optional: the worker stores its step count here after every step
  /// (monitoring, tests).
  std::shared_ptr<std::atomic<std::uint64_t>> step_counter;
  /// Optional: a delay added to every step (tests of slow workers).
  std::chrono::microseconds step_delay{0};
  /// Consecutive steps with a non-finite gradient after which the worker
  /// fails as diverged (job_config::divergence_steps); 0: never.
  std::uint32_t divergence_steps = 8;
  /// Takes over part of a lost worker's data; may be empty.
  adopt_fn adopt_data;
  /// Losses in the leader score (LSGD's running mean; the code's avg_size).
  std::size_t score_window = 10;
  /// After its last step or a stop, stay alive (answering score and fetch
  /// requests, ignoring pulls) until the coordinator ends the job: LSGD's
  /// evaluated model is a worker's.
  bool linger = false;
  /// Send the next step through the clock (a zero delay) instead of straight
  /// to the mailbox, so the worker's scheduler thread goes to other actors
  /// between two steps. For workers that never wait for a reply (LSGD,
  /// EASGD between exchanges): CAF lets an actor keep its thread while its
  /// mailbox is not empty, so without it they starve the coordinator and
  /// the leaders sharing the scheduler.
  bool yield_steps = false;
};

/// The state of a worker actor; it is the policy's worker_context.
class worker_state : public worker_context {
public:
  static inline const char* name = "worker";

  messages::worker_id id() const noexcept override;
  worker_actor::pointer self() noexcept override;
  optim::replica& replica() noexcept override;
  std::uint64_t steps() const noexcept override;
  std::uint64_t clock() const noexcept override;
  caf::duration request_timeout() const noexcept override;
  void count_sent(msg_type t, std::uint64_t bytes) noexcept override;
  actor_probe* probe() noexcept override;
  void count_wait(std::uint64_t nanoseconds) noexcept override;
  void fail(std::string reason) override;
  void schedule_timeout(std::uint64_t seq) override;
  bool finished() const noexcept override;
  void count_mix() noexcept override;
  void count_timeout() noexcept override;

  // -- used by the behavior --------------------------------------------------

  /// Runs one step: policy before, compute, policy after, report.
  void step();

  /// Whether every value of the last computed gradient is finite.
  bool gradient_finite() const;

  /// The report sent on done and stop.
  messages::worker_stats stats() const;

  /// The last step is done or a stop arrived: tells the policy (peers
  /// leave) and reports.
  void end_steps();

  worker_config config;
  worker_actor::pointer actor = nullptr;
  std::unique_ptr<optim::replica> replica_;
  std::unique_ptr<comm_policy> policy;
  messages::worker_stats counters;
  std::uint64_t start_clock = 0;
  bool started = false;
  bool in_step = false; ///< a step is under way (waiting for replies)
  bool finished_ = false;
  probe_ref probe_;
  /// SGP / DS-Sync: the job's workers in rank order (monitored).
  std::vector<caf::actor> peers;
  /// The leader score: the running mean of the last losses.
  optim::loss_window scores;
  std::uint64_t leads = 0; ///< LSGD: times this worker was a round's leader
  /// Steps in a row whose gradient had a non-finite value.
  std::uint32_t non_finite_run = 0;
};

namespace detail {

/// LSGD, as the elected leader: sends the parameters to every target.
void lead(worker_state& st, const messages::lead_msg& m);

/// LSGD: x <- x - lambda * (x - leader); a leader never pulls toward itself.
void pull(worker_state& st, const messages::pull_msg& m);

/// ShadowSync: adds a syncer's correction to the parameters.
void apply_delta(worker_state& st, const messages::delta_msg& m);

} // namespace detail

/// Spawn with `sys.spawn(worker, config)`; it waits for start_atom.
worker_actor::behavior_type
worker(worker_actor::stateful_pointer<worker_state> self, worker_config config);

} // namespace troupe::actors
