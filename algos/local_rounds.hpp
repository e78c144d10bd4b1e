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

/// A policy of rounds: the exchange is the parameter-server policy's
/// (synchronous or not: `exchange.sync`); subclasses say what a step does
/// locally and what a round pushes. Checkpoints save the round's start and
/// examples, the exchange's state and the subclass's (save_own).
class round_policy : public actors::comm_policy {
public:
  round_policy(std::vector<actors::shard_ref> shards,
               actors::ps_policy_options exchange, std::size_t parameters,
               std::uint64_t round_steps);

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

private:
  detail::round_context& rounds(actors::worker_context& ctx);

  std::uint64_t h_;
  std::unique_ptr<actors::comm_policy> exchange_;
  std::optional<detail::round_context> rounds_ctx_;
  std::vector<float> start_;
  std::uint64_t round_samples_ = 0;
};

/// Reads `name` (`size` floats) from a checkpoint, or throws naming it.
std::vector<float> read_floats(const optim::state_reader& r,
                               const std::string& name, std::size_t size);

} // namespace troupe::algos
