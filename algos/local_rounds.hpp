// What the algorithms of rounds of local steps share (DiLoCo, Parle): a
// worker's round is H steps of the job's clock; its first step fetches the
// global parameters from the shards, its last (or the worker's last) pushes
// what the round computed, through the shared parameter-server policy,
// which sees one step a round (its clock counts rounds: a fetch for round
// r waits, in synchronous rounds, for the shards' version r).

#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/comm_policy.hpp"
#include "algos/algorithm.hpp"
#include "algos/local_steps.hpp"

namespace troupe::algos {

namespace detail {

/// The worker as the exchange sees it: its steps and clock count rounds of
/// H steps; the rest is the worker's.
class round_context : public actors::worker_context {
public:
  round_context(actors::worker_context& w, std::uint64_t h) : w_(w), h_(h) {}
  messages::worker_id id() const noexcept override;
  caf::event_based_actor* self() noexcept override;
  optim::replica& replica() noexcept override;
  std::uint64_t steps() const noexcept override;
  std::uint64_t clock() const noexcept override;
  caf::duration request_timeout() const noexcept override;
  void count_sent(actors::msg_type t, std::uint64_t bytes) noexcept override;
  actors::actor_probe* probe() noexcept override;
  void count_wait(std::uint64_t ns) noexcept override;
  void fail(std::string reason) override;
  void schedule_timeout(std::uint64_t seq) override;
  bool finished() const noexcept override;
  std::uint64_t max_steps() const noexcept override;
  void count_mix() noexcept override;
  void count_timeout() noexcept override;
  bool from_coordinator() noexcept override;
  /// The worker this one stands for.
  const actors::worker_context& worker() const noexcept {
    return w_;
  }

private:
  actors::worker_context& w_;
  std::uint64_t h_;
};

} // namespace detail

/// What a policy of rounds is made with.
struct round_options {
  std::uint64_t round_steps = 1;      ///< H
  local_steps local;                  ///< a step's optimizer, rate, schedule
  actors::ps_policy_options exchange; ///< synchronous rounds or not
};

/// An algorithm of rounds: the shards' plan (synchronous rounds unless
/// asynchronous_rounds()), the workers' rounds of `round_steps` local steps
/// with the job's optimizer (the decentralized algorithms' defaults), and
/// the roles' failures and checkpoints the rounds support: checkpointable,
/// a lost worker's steps not handed on, a lost shard not restored.
class round_algorithm : public algorithm {
public:
  /// --inner-steps in [1, 10^6]; a subclass's own checks call this first.
  void check_flags(const job_options& o,
                   const std::set<std::string>& given) const override;
  void resolve(job_options& o, double model_lr) const override;
  actors::shard_plan plan(const actors::job_config& job) const override;
  /// Synchronous rounds: every shard counts each worker's clock, so that a
  /// round waits for all of them.
  bool tracks_clocks(const actors::job_config& job) const noexcept override;
  void check(const actors::job_config& job) const override;
  bool reassigns_steps() const noexcept override;
  bool checkpointable() const noexcept override;
  bool restores_shards(const actors::job_config& job) const override;
  bool replicates_shards(const actors::job_config& job) const override;

  std::uint64_t round_steps = 1; ///< --inner-steps
  local_steps local;             ///< resolved by build()

protected:
  virtual bool asynchronous_rounds() const noexcept {
    return false;
  }
  /// The workers' rounds in `job`: the job's pushes and fetches, in
  /// synchronous rounds or not.
  round_options rounds(const actors::job_config& job) const;
};

/// A policy of rounds: the exchange is the parameter-server policy's
/// (synchronous or not: `exchange.sync`); subclasses say what a step does
/// locally and what a round pushes. Checkpoints save the round's start and
/// examples, the exchange's state and the subclass's (save_own).
class round_policy : public actors::comm_policy {
public:
  round_policy(std::vector<actors::shard_ref> shards, const round_options& o,
               std::size_t parameters);

  void before_compute(actors::worker_context& ctx,
                      std::function<void()> ready) final;
  void after_compute(actors::worker_context& ctx, std::uint32_t samples,
                     std::function<void()> done) final;
  caf::message_handler handlers(actors::worker_context& ctx) final;
  void on_timeout(actors::worker_context& ctx, std::uint64_t seq) final;
  void quiesce(actors::worker_context& ctx, std::function<void()> done) final;
  void add_stats(messages::worker_stats& out) const final;
  void save(optim::state_writer& w, const std::string& prefix) const final;
  void load(const optim::state_reader& r, const std::string& prefix) final;

protected:
  /// A round begins: the replica's parameters are the global ones just
  /// fetched (also in start()).
  virtual void round_begins(actors::worker_context&) {}
  /// The step's gradient is in the replica's grads(): the local update.
  virtual void local_step(actors::worker_context& ctx) = 0;
  /// The round's last step, after its local update: puts what the round
  /// pushes in grads() (the shards apply the workers' mean as a gradient).
  virtual void round_ends(actors::worker_context& ctx) = 0;
  virtual void save_own(optim::state_writer& w,
                        const std::string& prefix) const = 0;
  virtual void load_own(const optim::state_reader& r, const std::string& prefix)
      = 0;

  /// The global parameters this round started from.
  const std::vector<float>& start() const noexcept {
    return start_;
  }
  std::uint64_t round_steps() const noexcept {
    return h_;
  }
  /// The local steps' rate at this step (noted on the worker's probe).
  double local_lr(actors::worker_context& ctx) const;

private:
  detail::round_context& rounds(actors::worker_context& ctx);

  std::uint64_t h_;
  double lr_;
  std::optional<optim::schedule> schedule_;
  std::unique_ptr<actors::comm_policy> exchange_;
  std::optional<detail::round_context> rounds_ctx_;
  std::vector<float> start_;
  std::uint64_t round_samples_ = 0;
};

/// Reads `name` (`size` floats) from a checkpoint, or throws naming it.
std::vector<float> read_floats(const optim::state_reader& r,
                               const std::string& name, std::size_t size);

} // namespace troupe::algos
