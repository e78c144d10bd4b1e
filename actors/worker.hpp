#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include <caf/behavior.hpp>
#include <caf/error.hpp>
#include <caf/message_handler.hpp>
#include <caf/response_promise.hpp>
#include <caf/result.hpp>
#include <caf/stateful_actor.hpp>

#include "actors/comm_policy.hpp"
#include "actors/interfaces.hpp"
#include "optim/replica.hpp"

// The worker: a small core every algorithm shares (worker_actor: start,
// step, adopt, stop, fetch, peers, leave, tick) and a communication policy
// that contributes the handlers of its algorithm's own messages
// (comm_policy::handlers: LSGD's score, lead and pull, SGP's shares,
// DS-Sync's group copies, ShadowSync's corrections). CAF 0.17 typed
// behaviors cannot be extended at run time, so the actor is dynamically
// typed inside: its behavior is the core's handlers .or_else(the policy's).
//
// What compile-time checking this gives up, and what it keeps:
// - Senders keep it. The core's senders (the coordinator, tests) use
//   worker_actor, the handle spawn_worker returns; an algorithm's senders use
//   a typed view of only the messages they send, declared with them and made
//   with caf::actor_cast (lsgd_member_actor, detail::peer_worker_actor,
//   shadow_member_actor: each in its algorithm's folder under algos/). A
//   send that fits no view does not compile.
// - The receiver side is lost: nothing checks that the worker's policy
//   handles what a view promises (an LSGD view cast onto an SGP worker, a
//   policy that forgot a handler). Such a message is unexpected at run
//   time: the worker logs it (rate-limited: the first, then a count per
//   second), counts it in its probe (received as "other", an error, and the
//   gauge "unexpected"), answers a request with caf::sec::unexpected_message
//   naming the worker and the message, and goes on. Never silently lost,
//   never a crash.

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
  /// A checkpoint's state of this worker (actors/checkpoint_state.hpp) to
  /// start from; null: a fresh worker.
  std::shared_ptr<const std::string> state;
  /// Optional: a delay added to every step (tests of slow workers).
  std::chrono::microseconds step_delay{0};
  /// Consecutive steps with a non-finite gradient after which the worker
  /// fails as diverged (job_config::divergence_steps); 0: never.
  std::uint32_t divergence_steps = 8;
  /// Takes over part of a lost worker's data; may be empty.
  adopt_fn adopt_data;
  /// After its last step or a stop, stay alive (answering fetch and the
  /// policy's requests) until the coordinator ends the job: LSGD's
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
  caf::event_based_actor* self() noexcept override;
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
  std::uint64_t max_steps() const noexcept override {
    return config.max_steps;
  }
  void count_mix() noexcept override;
  void count_timeout() noexcept override;
  bool from_coordinator() noexcept override;
  /// The message being handled comes from peer r's own actor.
  bool sent_by_peer(messages::worker_id r) const noexcept;
  /// Why a peer list is refused ("" if not): not from the coordinator's
  /// node, not one handle per rank, ranks not increasing, or this worker's
  /// own rank among them; a table with ranks, or not holding this worker.
  std::string peer_list_problem(const messages::peer_list_msg& m);
  /// peers_atom: the first acceptable peer list or table, to the policy
  /// (a peer list's handles are monitored).
  void take_peers(messages::peer_list_msg& m);

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

  /// cede_atom: gives up num/den of the remaining steps (one is kept) and
  /// of the examples, taken among those not drawn yet this epoch
  /// (optim::replica::cede_examples; worker_join.cpp).
  messages::cede_msg cede(std::uint32_t num, std::uint32_t den);

  worker_config config;
  caf::stateful_actor<worker_state>* actor = nullptr;
  std::unique_ptr<optim::replica> replica_;
  std::unique_ptr<comm_policy> policy;
  messages::worker_stats counters;
  std::uint64_t start_clock = 0;
  bool started = false;
  bool in_step = false; ///< a step is under way (waiting for replies)
  bool finished_ = false;
  probe_ref probe_;
  /// The probe's "loss" gauge: the minibatch loss smoothed (NaN: none yet).
  double loss_ema_ = std::numeric_limits<double>::quiet_NaN();
  /// A step done, in the probe: its progress and the gauges steps, samples
  /// and loss (worker_gauges.cpp).
  void note_step(double loss);
  /// Peer-to-peer algorithms: the ranks the worker exchanges with
  /// (increasing) and their handles (monitored; null once down).
  std::vector<messages::worker_id> peer_ranks;
  std::vector<caf::actor> peers;
  /// Or, with any_peer, every worker's handle (shared, not monitored: the
  /// coordinator tells of every loss).
  messages::handle_table peer_table;
  /// Steps in a row whose gradient had a non-finite value.
  std::uint32_t non_finite_run = 0;
  /// Messages that neither the core nor the policy handles.
  std::uint64_t unexpected = 0;

  // -- checkpoints (worker_pause.cpp) ----------------------------------------

  /// pause_atom: pause at the next step boundary, then answer the state.
  caf::result<std::string> request_pause();

  /// Whether the step about to start must wait (a pause was asked for and
  /// the policy may pause here, or the worker is paused); pauses it then.
  bool hold_step();

  /// resume_atom: go on after a pause.
  void resume();

  /// A pause asked for and not yet answered.
  std::optional<caf::response_promise> pause_reply;
  /// Counts the pauses taken and given up: a policy's quiesce that ends
  /// after its pause was given up answers nothing.
  std::uint64_t pause_generation = 0;
  bool paused = false;
  /// Started from a checkpoint's state (start_atom keeps its clock).
  bool restored = false;
  /// A step waits for its policy to be ready (a fetch's replies): nothing
  /// of the step is done yet, so the worker may pause there too (a
  /// synchronous worker one round ahead waits for the others' pushes).
  bool waiting_ready = false;
  /// The rest of a step whose policy became ready while paused.
  std::function<void()> deferred;
};

/// The error a worker answers (and logs) to a message of `verb` that comes
/// neither from this process nor from its coordinator's node; nullopt if
/// the sender may ask.
std::optional<caf::error>
refuse_unless_boss(caf::stateful_actor<worker_state>* self, const char* verb);

/// The worker's checkpoint messages: pause_atom (answered with the state at
/// the next step boundary) and resume_atom (worker_pause.cpp).
caf::message_handler
checkpoint_handlers(caf::stateful_actor<worker_state>* self);

/// The worker's part in a node joining the job: cede_atom
/// (worker_join.cpp).
caf::message_handler join_handlers(caf::stateful_actor<worker_state>* self);

/// Spawn with `caf::actor_cast<worker_actor>(sys.spawn(worker, config))`
/// (spawn_worker in roles.hpp does); it waits for start_atom.
caf::behavior worker(caf::stateful_actor<worker_state>* self,
                     worker_config config);

} // namespace troupe::actors
