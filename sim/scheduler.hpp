#pragma once

// The simulator's scheduler: a CAF coordinator that runs every actor of a
// simulated cluster on one thread in virtual time. Each actor belongs to a
// node (an actor spawned by another one belongs to its node). Every message
// between nodes goes through the link model; compute takes the time the
// compute model gives (actors report it: actors/clock.hpp); an actor that is
// busy does not take its next message until it is done. Events at the same
// instant run in a fixed order (timers, then deliveries in the order they
// were sent), so a run is a function of its inputs: its trace hash says so.
//
// How: an actor's mailbox holds at most the one message it is handling. A
// message sent to an idle actor unblocks its mailbox, which calls enqueue()
// here at once (inside the sender's handler): the scheduler takes the
// message out again, stamps it with the sender's virtual time and delivers
// it when the link model says. A message an actor sends itself is taken out
// after its handler. Detached actors (own threads) and blocking receives do
// not run here.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <caf/detail/test_actor_clock.hpp>
#include <caf/execution_unit.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/scheduler/test_coordinator.hpp>

#include "actors/clock.hpp"
#include "sim/link_model.hpp"
#include "sim/shared_cores.hpp"
#include "sim/size_counter.hpp"

namespace caf {
class scheduled_actor;
}

namespace troupe::sim {

/// How long work takes on a simulated node.
struct compute_options {
  /// Seconds one sample's forward and backward pass take on a node of speed
  /// 1 (the whole model).
  double sample_seconds = 0;
  /// A forward pass's share of a step's cost.
  double forward_share = 1.0 / 3;
  /// An evaluation's seconds, whatever its test samples (< 0: a forward
  /// pass per sample, as above): an evaluator on hardware of its own.
  double eval_seconds = -1;
  /// Seconds a shard takes to update one parameter value (its optimizer's
  /// step) on a node of speed 1.
  double value_seconds = 0;
  /// Values a shard's update counts per value it updates (troupe simulate
  /// --virtual-params: virtual over real parameters; 1: as they are).
  double update_scale = 1;
  /// Per node: how much slower than nominal it is (1: nominal); missing
  /// nodes are nominal.
  std::vector<double> slowdown;
  /// Each step of a worker is, with this probability, `straggle_factor`
  /// times slower (seeded per node).
  double straggle_p = 0;
  double straggle_factor = 1;
  /// Each step of a worker takes a log-normal factor of mean 1 and this
  /// coefficient of variation (0: none): the run-to-run noise of real
  /// steps, under which an asynchronous job's staleness, and with it its
  /// step count to a target, varies.
  double jitter = 0;
  /// Seeds the stragglers' and the jitter's draws (per node).
  std::uint64_t seed = 1;
  /// The CPU cost of a message between nodes, in Gb/s of its costed bytes
  /// (0: free): the sender's node's broker serializes it before it leaves
  /// (the sending actor goes on), and the receiver's node's deserializes it
  /// before its actor gets it (one message at a time a node, encoding and
  /// decoding in turn, as CAF's one broker does).
  double serialize_gbps = 0;
  /// Pushes and fetch replies between nodes go through shared memory (as
  /// between the processes of one host, troupe launch --local): only a
  /// reference to their values (36 bytes) crosses the link, and
  /// (de)serializing costs half their values' bytes (one copy a side: into
  /// the segment, out of it; a message through the socket takes two).
  bool shared_memory = false;
  /// What such a message's values cost a side, as a share of what they
  /// cost through the socket (0.5: one copy of two; more where mapping the
  /// segment costs, as measured on a quiet machine, docs/simulation.md).
  double shm_share = 0.5;
  /// All nodes are processes on one host of this many cores (0: every node
  /// has cores of its own): compute and (de)serialization each take a core,
  /// the earliest free one, and wait for one when all are taken.
  std::uint32_t host_cores = 0;
  /// With host_cores: how the host's cores are shared. false: first come,
  /// first served, each piece of work on the earliest free core until it is
  /// done. true: fairly, every piece of work on the host at once at min(1,
  /// cores / pieces) of a core (processor sharing, as the kernel's fair
  /// scheduler shares them between runnable threads), so that what a
  /// handler sends after its compute leaves when that compute is done.
  bool fair_share = false;
  /// Actor threads a node has (0: as many as its actors need; with first
  /// come, first served sharing only): a handler waits until one of its
  /// node's threads is free, as CAF's scheduler (scheduler.max-threads)
  /// runs a process's actors on its threads. A node's broker is a thread
  /// of its own.
  std::uint32_t node_threads = 0;
  /// With shared_memory: a fetch reply's values are copied into the
  /// segment by the actor that answers, in its handler (as
  /// parameter_shard's tensor::shared_copy does), not by its node's broker.
  bool reply_copy_in_handler = false;
  /// With shared_memory: the first shm_segment_bytes a node writes to
  /// another's segment touch fresh pages, which the writer faults in at this
  /// rate on top of its copy (0: free); troupe's segments are 64 MiB a
  /// destination (messages/shm_layout.hpp), used once through before their
  /// pages are reused.
  double first_touch_gbps = 0;
  std::uint64_t shm_segment_bytes = std::uint64_t{64} << 20;
};

/// exp(sigma z - sigma^2 / 2) with sigma^2 = ln(1 + cv^2) and z standard
/// normal from the uniforms u1 in (0, 1] and u2 in [0, 1) (Box-Muller): a
/// log-normal factor of mean 1 and coefficient of variation `cv`.
double lognormal_factor(double u1, double u2, double cv) noexcept;

/// Counts of a run.
struct run_stats {
  std::uint64_t messages = 0;   ///< delivered
  std::uint64_t remote = 0;     ///< of them between nodes
  std::uint64_t handled = 0;    ///< actor resumes
  std::uint64_t timers = 0;     ///< timeouts fired
  std::uint64_t actors = 0;     ///< spawned
  std::uint64_t compute_ns = 0; ///< modelled compute, summed over actors
  std::uint64_t straggles = 0;  ///< steps slowed by a straggle
  std::uint64_t dropped = 0;    ///< sent past a crash of their node
  std::uint64_t trace_hash = 0; ///< FNV-1a over the deliveries
  /// Payload bytes between nodes (tensor values, compressed blocks), as
  /// costed (scaled by the payload scale).
  std::uint64_t payload_bytes = 0;
  /// Modelled (de)serialization, summed over both sides.
  std::uint64_t serialize_ns = 0;
  /// Time compute and (de)serialization waited for a core of the host.
  std::uint64_t core_wait_ns = 0;
};

class scheduler : public caf::scheduler::test_coordinator,
                  public actors::time_model {
public:
  /// The virtual clock: the simulator's current instant, plus what the
  /// running actor has spent so far in its handler.
  class clock_type : public caf::detail::test_actor_clock {
  public:
    time_point now() const noexcept override {
      return current_time + offset;
    }
    /// The earliest timer's due time, if any.
    bool next_due(time_point& t) const;
    duration_type offset{0};
  };

  explicit scheduler(caf::actor_system& sys);
  ~scheduler() override;

  /// Installs this scheduler in `cfg` (before the actor system exists).
  static void install(caf::actor_system_config& cfg);
  /// The scheduler of `sys` (throws if it is not one).
  static scheduler& of(caf::actor_system& sys);

  clock_type& clock() noexcept override {
    return clock_;
  }
  void enqueue(caf::resumable* ptr) override;
  void stop() override;

  /// Sets the cluster: `nodes` nodes, their network and compute.
  void configure(std::uint32_t nodes, network_options net,
                 compute_options compute);
  /// Costs every payload between nodes as `s` scales it (before run()).
  void scale_payloads(payload_scale s) noexcept {
    payloads_ = s;
  }
  const payload_scale& payloads() const noexcept {
    return payloads_;
  }
  /// Actors spawned from outside any actor go on `node` from now on.
  void place_next(std::uint32_t node) noexcept {
    outside_node_ = node;
  }
  /// The node of actor `id` (0 if unknown).
  std::uint32_t node_of(caf::actor_id id) const noexcept;

  /// Runs until `done()` holds, nothing is left to do, `max_events` actor
  /// resumes have run (0: no cap) or `wall` real time has passed. Returns
  /// false if it stopped because nothing was left to do before `done()`.
  bool run(const std::function<bool()>& done, std::uint64_t max_events = 0,
           std::chrono::nanoseconds wall = std::chrono::hours{24});
  /// Why the last run() stopped early ("" if it did not).
  const std::string& stop_reason() const noexcept {
    return stop_reason_;
  }
  /// Kills every actor still alive and runs until they are gone.
  void shutdown();
  /// At `at` (virtual nanoseconds since the start), node `node` crashes:
  /// every actor on it is killed (exit_reason::kill); requests to them are
  /// answered with an error from then on.
  void crash_at(nanos at, std::uint32_t node);
  /// The crashes that happened: node and virtual time.
  const std::vector<std::pair<std::uint32_t, nanos>>& crashes() const noexcept {
    return crashed_;
  }

  /// Virtual nanoseconds since the start.
  nanos elapsed() const noexcept;
  const run_stats& stats() const noexcept {
    return stats_;
  }
  const link_model& network() const noexcept {
    return *links_;
  }
  std::uint32_t nodes() const noexcept {
    return links_ ? links_->nodes() : 1;
  }

  // -- actors::time_model ---------------------------------------------------
  void compute(const caf::local_actor* self, actors::work_kind kind,
               std::uint64_t samples, double share) override;
  void busy(const caf::local_actor* self, std::chrono::nanoseconds d) override;

private:
  struct record;
  struct event;
  struct shared_work;
  struct broker_job;
  class unit;

  record& rec(caf::actor_id id);
  void notified(caf::resumable* ptr);
  void sweep(caf::scheduled_actor* a, record& r);
  void send_event(nanos at, caf::scheduled_actor* to,
                  caf::mailbox_element_ptr x);
  void arrive(event& e);
  void depart(event e);
  /// Sent past a crash of its node (computed beyond it): dropped, counted.
  bool never_sent(const event& e);
  void make_ready(caf::actor_id id, record& r);
  void run_one(caf::actor_id id);
  void push_event(event e);
  void take_foreign();
  void crash(std::uint32_t node);
  nanos now_ns() const noexcept;
  void charge(const caf::local_actor* self, nanos d);
  /// When work of `d` that can start at `t` is done: at once on a node of
  /// its own, else on the host's earliest free core (taken until then).
  nanos on_core(nanos t, nanos d);
  /// The (de)serialization time of `bytes` (0: free).
  nanos serialize_time(std::uint64_t bytes) const noexcept;
  /// `node`'s broker (de)serializes for d from `at` on, after what it took
  /// before and on a core; returns when it is done.
  nanos on_broker(std::uint32_t node, nanos at, nanos d);
  /// A message that reached its node: deserialized there first, then
  /// delivered (false: it is delivered now).
  bool decode(event& e);

  // -- fair sharing of the host's cores (scheduler_sharing.cpp) -------------
  /// A message between nodes that leaves now: encoded by its node's broker,
  /// then on the links.
  void leave(event e);
  /// Queues (de)serialization of `work` on `node`'s broker.
  void to_broker(std::uint32_t node, nanos work, event e, bool encode);
  /// The running actor's handler is over: its work goes on the cores (or
  /// it is free at once).
  void handler_over(caf::actor_id id, record& r);
  /// Runs what the shared cores reached by `t`.
  void shared_until(nanos t);
  /// Node `node` crashed: its work leaves the cores.
  void drop_shared(std::uint32_t node);
  /// Whether a send of the running actor waits for its compute to be done.
  bool deferred(caf::actor_id from) const noexcept;

  clock_type clock_;
  std::unique_ptr<unit> unit_;
  std::unique_ptr<link_model> links_;
  compute_options compute_;
  payload_scale payloads_;
  std::vector<std::uint64_t> straggle_state_;
  std::deque<record> records_; // by actor id (stable while it grows)
  std::vector<event> events_;  // a heap by (at, seq)
  std::deque<caf::actor_id> ready_;
  std::uint64_t seq_ = 0;
  std::uint32_t outside_node_ = 0;
  caf::actor_id running_ = 0;
  std::string stop_reason_;
  run_stats stats_{0, 0, 0, 0, 0, 0, 0, 0, 0xcbf29ce484222325ULL};
  std::thread::id loop_thread_;
  std::mutex foreign_mtx_;
  std::vector<caf::resumable*> foreign_;
  std::vector<std::pair<std::uint32_t, nanos>> crashed_;
  std::vector<nanos> crashed_at_; ///< per node (max: never)
  /// Per host core: its busy intervals [from, to), in order.
  std::vector<std::vector<std::pair<nanos, nanos>>> cores_;
  std::vector<nanos> broker_free_; ///< per node: its broker busy until
  /// Per node (with node_threads): when each of its threads is free.
  std::vector<std::vector<nanos>> threads_free_;
  /// Per (writer, reader) node: bytes written into the reader's segment.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> touched_;
  /// Fair sharing (null: first come, first served or nodes of their own).
  std::unique_ptr<shared_cores> shared_;
  std::map<shared_cores::task_id, shared_work> shared_work_; ///< stable
  std::vector<std::deque<broker_job>> broker_queue_;         ///< per node
  /// The running handler's sends after part of its compute.
  std::vector<std::pair<nanos, event>> pending_;
};

} // namespace troupe::sim
