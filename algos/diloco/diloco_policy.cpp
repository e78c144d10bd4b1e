// DiLoCo's worker policy: H local steps with the inner optimizer between
// two exchanges of the shared parameter-server policy, which sees a round
// as one step (round_context).

#include "algos/diloco/diloco_policy.hpp"

#include <algorithm>
#include <cstring>

#include "optim/consensus.hpp"
#include "optim/state_file.hpp"

namespace troupe::algos {

namespace {

/// The worker as the exchange sees it: its steps and clock count rounds of
/// H steps (a fetch for round r waits for the shards' version r, a push
/// makes round r + 1); the rest is the worker's.
class round_context : public actors::worker_context {
public:
  round_context(actors::worker_context& w, std::uint64_t h) : w_(w), h_(h) {}

  messages::worker_id id() const noexcept override {
    return w_.id();
  }
  caf::event_based_actor* self() noexcept override {
    return w_.self();
  }
  optim::replica& replica() noexcept override {
    return w_.replica();
  }
  std::uint64_t steps() const noexcept override {
    return w_.steps() / h_;
  }
  std::uint64_t clock() const noexcept override {
    return w_.clock() / h_;
  }
  caf::duration request_timeout() const noexcept override {
    return w_.request_timeout();
  }
  void count_sent(actors::msg_type t, std::uint64_t bytes) noexcept override {
    w_.count_sent(t, bytes);
  }
  actors::actor_probe* probe() noexcept override {
    return w_.probe();
  }
  void count_wait(std::uint64_t ns) noexcept override {
    w_.count_wait(ns);
  }
  void fail(std::string reason) override {
    w_.fail(std::move(reason));
  }
  void schedule_timeout(std::uint64_t seq) override {
    w_.schedule_timeout(seq);
  }
  bool finished() const noexcept override {
    return w_.finished();
  }
  std::uint64_t max_steps() const noexcept override {
    auto m = w_.max_steps();
    return m == ~std::uint64_t{0} ? m : (m + h_ - 1) / h_;
  }
  void count_mix() noexcept override {
    w_.count_mix();
  }
  void count_timeout() noexcept override {
    w_.count_timeout();
  }
  bool from_coordinator() noexcept override {
    return w_.from_coordinator();
  }
  /// The worker this one stands for.
  const actors::worker_context& worker() const noexcept {
    return w_;
  }

private:
  actors::worker_context& w_;
  std::uint64_t h_;
};

class diloco_policy : public actors::comm_policy {
public:
  diloco_policy(std::vector<actors::shard_ref> shards,
                diloco_policy_options opts, std::size_t n)
      : opts_(std::move(opts)),
        inner_(optim::make_optimizer<float>(opts_.inner, n)), start_(n, 0.0f) {
    if (opts_.inner_steps == 0)
      opts_.inner_steps = 1;
    if (opts_.schedule)
      schedule_.emplace(*opts_.schedule);
    // The exchange pushes what it finds in the gradient buffer at a
    // round's end (the pseudo-gradient) and fetches at a round's start.
    opts_.exchange.n_fetch = 1;
    opts_.exchange.n_push = 1;
    opts_.exchange.prefetch = false;
    opts_.exchange.local_lr = 0;
    exchange_ = actors::make_ps_policy(std::move(shards), opts_.exchange, n);
  }

  void before_compute(actors::worker_context& ctx,
                      std::function<void()> ready) override {
    if (ctx.clock() % opts_.inner_steps != 0) {
      ready();
      return;
    }
    exchange_->before_compute(rounds(ctx), [this, &ctx,
                                            ready = std::move(ready)] {
      auto& rep = ctx.replica();
      std::memcpy(start_.data(), rep.params(), start_.size() * sizeof(float));
      ready();
    });
  }

  void after_compute(actors::worker_context& ctx, std::uint32_t samples,
                     std::function<void()> done) override {
    auto& rep = ctx.replica();
    auto n = rep.size();
    auto lr = schedule_ ? schedule_->lr(ctx.steps()) : opts_.lr;
    inner_->step(rep.params(), rep.grads(), n, lr);
    actors::note_lr(ctx, lr);
    round_samples_ += samples;
    bool last = ctx.steps() + 1 >= ctx.max_steps();
    if ((ctx.clock() + 1) % opts_.inner_steps != 0 && !last) {
      done();
      return;
    }
    // The round's pseudo-gradient goes where the exchange reads the
    // gradient, weighted by the round's examples.
    optim::pseudo_gradient(start_.data(), rep.params(), rep.grads(), n);
    auto s = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(round_samples_, ~std::uint32_t{0}));
    round_samples_ = 0;
    exchange_->after_compute(rounds(ctx), s, std::move(done));
  }

  caf::message_handler handlers(actors::worker_context& ctx) override {
    return exchange_->handlers(rounds(ctx));
  }

  void on_timeout(actors::worker_context& ctx, std::uint64_t seq) override {
    exchange_->on_timeout(rounds(ctx), seq);
  }

  void quiesce(actors::worker_context& ctx,
               std::function<void()> done) override {
    exchange_->quiesce(rounds(ctx), std::move(done));
  }

  /// Between two steps: the round's start, the examples it has taken, the
  /// inner optimizer's state and the exchange's.
  void save(optim::state_writer& w, const std::string& prefix) const override {
    w.put(prefix + "round_start", start_);
    w.put_u64(prefix + "round_samples", round_samples_);
    inner_->save(w, prefix + "inner.");
    exchange_->save(w, prefix + "exchange.");
  }

  void load(const optim::state_reader& r, const std::string& prefix) override {
    auto start = r.f32(prefix + "round_start");
    if (start.size() != start_.size())
      throw r.error(prefix + "round_start",
                    "has " + std::to_string(start.size()) + " values, not "
                        + std::to_string(start_.size()));
    auto samples = r.u64_scalar(prefix + "round_samples");
    inner_->load(r, prefix + "inner.");
    exchange_->load(r, prefix + "exchange.");
    start_ = std::move(start);
    round_samples_ = samples;
  }

  void add_stats(messages::worker_stats& out) const override {
    exchange_->add_stats(out); // its pushes: one a round
  }

private:
  /// The worker as the exchange sees it (made once: the exchange's
  /// replies hold on to it).
  round_context& rounds(actors::worker_context& ctx) {
    if (!rounds_ctx_ || &rounds_ctx_->worker() != &ctx)
      rounds_ctx_.emplace(ctx, opts_.inner_steps);
    return *rounds_ctx_;
  }

  diloco_policy_options opts_;
  std::unique_ptr<optim::optimizer<float>> inner_;
  std::optional<optim::schedule> schedule_;
  std::unique_ptr<actors::comm_policy> exchange_;
  std::optional<round_context> rounds_ctx_;
  std::vector<float> start_;
  std::uint64_t round_samples_ = 0;
};

} // namespace

std::unique_ptr<actors::comm_policy>
make_diloco_policy(std::vector<actors::shard_ref> shards,
                   diloco_policy_options opts, std::size_t parameters) {
  return std::make_unique<diloco_policy>(std::move(shards), std::move(opts),
                                         parameters);
}

} // namespace troupe::algos
