// EASGD / EAMSGD's worker policy: the elastic exchange with the center on
// the shards, every tau steps, and local steps in between.

#include "algos/easgd/easgd_policy.hpp"

#include <chrono>
#include <cstring>

#include <caf/typed_event_based_actor.hpp>

#include "actors/probe.hpp"
#include "actors/shard_fetch.hpp"
#include "algos/shard_flush.hpp"

namespace troupe::algos {

using namespace messages;

namespace {

class easgd_policy : public actors::comm_policy {
public:
  easgd_policy(std::vector<actors::shard_ref> shards, optim::easgd_options opts,
               std::size_t n, std::optional<optim::schedule_options> sched,
               std::size_t replay)
      : shards_(std::move(shards)), opts_(opts), center_(n, 0.0f),
        elastic_(n, 0.0f), versions_(shards_.size(), 0),
        fetch_(shards_, versions_) {
    if (sched)
      schedule_.emplace(*sched);
    if (replay > 0 && n > 0)
      log_.emplace(shards_.size(), actors::push_log::capacity_for(replay, n));
    if (opts_.momentum > 0)
      velocity_.assign(n, 0.0f);
  }

  void before_compute(actors::worker_context& ctx,
                      std::function<void()> ready) override {
    if (prepared_) {
      // Restored from a pause inside this step's preparation (see save):
      // its exchange and look-ahead are done.
      ready();
      return;
    }
    if (ctx.steps() % opts_.tau != 0) {
      look_ahead(ctx);
      prepared_ = true;
      ready();
      return;
    }
    // READ(x_c): the center from every shard; then e = alpha * (x - x_c)
    // from the pre-step parameters.
    // A lost shard's fetch waits for the shard restored from the latest
    // checkpoint (shard_fetch.hpp).
    fetch_.start(ctx, center_.data(), [this, &ctx, ready = std::move(ready)] {
      auto& rep = ctx.replica();
      // A worker's first exchange with a center that has moved (a worker
      // of a node that joined the running job) starts it from the center.
      if (seq_ == 0 && ctx.steps() == 0 && moved())
        std::memcpy(rep.params(), center_.data(), rep.size() * sizeof(float));
      optim::elastic_difference(rep.params(), center_.data(), opts_.alpha,
                                elastic_.data(), rep.size());
      pending_ = true;
      look_ahead(ctx);
      prepared_ = true;
      ready();
    });
  }

  /// A center shard restored from a checkpoint (its node was lost) has a
  /// new handle: a fetch under way starts again; the elastic pushes sent
  /// to the lost one are lost (counted: the pushes reported here against
  /// the restored shard's). A hot backup that took over is sent the recent
  /// pushes again (its de-duplication drops those it has).
  caf::message_handler handlers(actors::worker_context& ctx) override {
    return {[this, &ctx](rebind_atom, std::uint32_t i, caf::actor& h) {
      auto scope = on_message(ctx.probe(), ctx.self(), actors::msg_type::other,
                              actors::small_message_bytes);
      if (!fetch_.rebind(ctx, i, h))
        return;
      if (log_)
        log_->resend(ctx, i, h);
      fetch_.restart(ctx);
    }};
  }

  void on_timeout(actors::worker_context& ctx, std::uint64_t seq) override {
    fetch_.on_timeout(ctx, seq);
  }

  void add_stats(worker_stats& out) const override {
    out.pushes = seq_;
  }

  void after_compute(actors::worker_context& ctx, std::uint32_t samples,
                     std::function<void()> done) override {
    prepared_ = false;
    auto& rep = ctx.replica();
    auto n = rep.size();
    float* x = rep.params();
    const float* g = rep.grads();
    auto lr
        = static_cast<float>(schedule_ ? schedule_->lr(ctx.steps()) : opts_.lr);
    actors::note_lr(ctx, lr);
    // Plain: x <- x - eta g. EAMSGD: x already holds x + delta v, so
    // x <- x - eta g and v <- delta v - eta g.
    for (std::size_t i = 0; i < n; ++i)
      x[i] -= lr * g[i];
    if (!velocity_.empty())
      for (std::size_t i = 0; i < n; ++i)
        velocity_[i] -= lr * g[i];
    if (pending_) {
      pending_ = false;
      for (std::size_t i = 0; i < n; ++i)
        x[i] -= elastic_[i];
      send_elastic(ctx, samples);
    }
    done();
  }

  // -- checkpoints --------------------------------------------------------

  /// The center's fetch and the elastic pushes received by the shards (the
  /// fetch's reply comes before the flush's, so a pause inside a step's
  /// preparation saves it prepared).
  void quiesce(actors::worker_context& ctx,
               std::function<void()> done) override {
    algos::flush_shards(ctx, shards_, std::move(done));
  }

  /// A worker pauses between steps, or inside a step once its preparation
  /// (the center read, e, the look-ahead) is done: `prepared` says which,
  /// and a restored worker then does not prepare the step again.
  void save(optim::state_writer& w, const std::string& prefix) const override {
    w.put(prefix + "center", center_);
    w.put(prefix + "elastic", elastic_);
    w.put(prefix + "velocity", velocity_);
    w.put(prefix + "versions", versions_);
    w.put_u64(prefix + "seq", seq_);
    w.put_u64(prefix + "pending", pending_ ? 1 : 0);
    w.put_u64(prefix + "prepared", prepared_ ? 1 : 0);
  }

  void load(const optim::state_reader& r, const std::string& prefix) override {
    auto read = [&](const char* name, std::vector<float>& into) {
      auto v = r.f32(prefix + name);
      if (v.size() != into.size())
        throw r.error(prefix + name, "has " + std::to_string(v.size())
                                         + " values, not "
                                         + std::to_string(into.size()));
      into = std::move(v);
    };
    read("center", center_);
    read("elastic", elastic_);
    read("velocity", velocity_);
    auto versions = r.u64(prefix + "versions");
    if (versions.size() != versions_.size())
      throw r.error(prefix + "versions", "not one version per shard");
    versions_ = std::move(versions);
    seq_ = r.u64_scalar(prefix + "seq");
    pending_ = r.u64_scalar(prefix + "pending") != 0;
    prepared_ = r.u64_scalar(prefix + "prepared") != 0;
  }

private:
  /// Some shard of the center took a push (its version).
  bool moved() const noexcept {
    for (auto v : versions_)
      if (v > 0)
        return true;
    return false;
  }

  /// EAMSGD: v <- delta v; x <- x + v (the gradient is taken there).
  void look_ahead(actors::worker_context& ctx) {
    if (velocity_.empty())
      return;
    auto delta = static_cast<float>(opts_.momentum);
    float* x = ctx.replica().params();
    for (std::size_t i = 0; i < velocity_.size(); ++i) {
      velocity_[i] *= delta;
      x[i] += velocity_[i];
    }
  }

  /// ELASTIC(e) to every shard: the shard adds e to its part of the center
  /// (sent as the gradient -e of a unit-rate SGD step, shard_config).
  void send_elastic(actors::worker_context& ctx, std::uint32_t samples) {
    ++seq_;
    for (auto& v : elastic_)
      v = -v;
    actors::push_all(ctx, shards_, elastic_.data(), seq_, versions_, samples,
                     nullptr, log_ ? &*log_ : nullptr);
  }

  std::vector<actors::shard_ref> shards_;
  optim::easgd_options opts_;
  std::optional<optim::schedule> schedule_;
  std::vector<float> center_, elastic_, velocity_;
  std::vector<std::uint64_t> versions_;
  actors::shard_fetch fetch_;
  std::optional<actors::push_log> log_; ///< recent pushes (--shard-replicas)
  bool pending_ = false;
  /// This step's preparation is done (before_compute ran, after_compute
  /// not yet).
  bool prepared_ = false;
  std::uint64_t seq_ = 0;
};

} // namespace

std::unique_ptr<actors::comm_policy>
make_easgd_policy(std::vector<actors::shard_ref> shards,
                  optim::easgd_options opts, std::size_t parameters,
                  std::optional<optim::schedule_options> schedule,
                  std::size_t replay) {
  if (opts.tau == 0)
    opts.tau = 1;
  return std::make_unique<easgd_policy>(std::move(shards), opts, parameters,
                                        std::move(schedule), replay);
}

} // namespace troupe::algos
