// The parameter-server policy (Downpour, SSP, sync): fetch, compute, push;
// asynchronous workers may prefetch (the next step's fetch in flight while
// a step computes).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <utility>

#include <caf/typed_event_based_actor.hpp>

#include "actors/comm_policy.hpp"
#include "actors/shard_fetch.hpp"
#include "optim/optimizer.hpp"

namespace troupe::actors {

using namespace messages;

namespace {

class ps_policy : public comm_policy {
public:
  ps_policy(std::vector<shard_ref> shards, ps_policy_options opts,
            std::size_t n)
      : shards_(std::move(shards)), opts_(std::move(opts)),
        versions_(shards_.size(), 0), fetched_(shards_.size(), 0),
        fetch_(shards_, fetched_) {
    opts_.prefetch = opts_.prefetch && !opts_.sync;
    if (opts_.n_push > 1)
      acc_.assign(n, 0.0f);
    if (!opts_.sync && opts_.local_lr > 0)
      local_ = optim::make_optimizer<float>(opts_.local_optimizer, n);
    if (opts_.replay > 0 && n > 0)
      log_.emplace(shards_.size(), push_log::capacity_for(opts_.replay, n));
    if (opts_.compress.method != optim::codec::none)
      for (auto& sh : shards_)
        compressors_.emplace_back(
            opts_.compress,
            optim::segments_of(opts_.layers, sh.range.offset, sh.range.size));
  }

  void before_compute(worker_context& ctx,
                      std::function<void()> ready) override {
    bool due = opts_.sync || ctx.steps() % opts_.n_fetch == 0 || refetch_;
    if (!opts_.prefetch) {
      if (!due) {
        ready();
        return;
      }
      refetch_ = false;
      fetch_.start(ctx, ctx.replica().params(),
                   [this, ready = std::move(ready)] {
                     versions_ = fetched_;
                     ready();
                   });
      return;
    }
    // With prefetch: this step's parameters are the prefetch's (waited
    // for if still in flight), or, without one (the first step, a restore,
    // a shard's new handle), fetched now; then the next due fetch is sent.
    auto go = [this, &ctx, ready = std::move(ready)] {
      prefetch_next(ctx);
      ready();
    };
    if (refetch_) {
      refetch_ = false;
      next_ = next_state::none; // fetched from a lost shard
    } else if (!due) {
      go();
      return;
    }
    switch (next_) {
    case next_state::ready:
      install(ctx);
      go();
      return;
    case next_state::under_way:
      waiting_ = [this, &ctx, go = std::move(go)] {
        install(ctx);
        go();
      };
      wait_began_ = now(ctx.self());
      return;
    case next_state::none:
      fetch_.start(ctx, ctx.replica().params(), [this, go = std::move(go)] {
        versions_ = fetched_;
        go();
      });
      return;
    }
  }

  /// A shard restored from a checkpoint (its node was lost) has a new
  /// handle: a fetch under way starts again, the next step fetches.
  caf::message_handler handlers(worker_context& ctx) override {
    return {[this, &ctx](rebind_atom, std::uint32_t i, caf::actor& h) {
      auto scope = on_message(ctx.probe(), ctx.self(), msg_type::other,
                              small_message_bytes);
      if (!fetch_.rebind(ctx, i, h))
        return;
      // A backup that took over may miss the newest pushes its primary
      // took: sent again, those it has are dropped as duplicates. A shard
      // restored from a checkpoint into synchronous rounds takes the last
      // one for the round it was lost in (or moves past it).
      if (log_)
        log_->resend(ctx, i, h);
      // A fetch or prefetch under way starts again, from the new handles;
      // else the next step fetches (a prefetch done came from the lost one).
      refetch_ = !fetch_.restart(ctx);
      // A checkpoint's flush waiting on the lost shard is done: its node
      // may never answer (reached through the coordinator's), and the
      // restored shard holds none of the pushes since that checkpoint.
      if (i < flush_waits_.size() && flush_waits_[i]) {
        auto wait = std::move(flush_waits_[i]);
        flush_waits_[i] = nullptr;
        wait();
      }
    }};
  }

  void on_timeout(worker_context& ctx, std::uint64_t seq) override {
    fetch_.on_timeout(ctx, seq);
  }

  void after_compute(worker_context& ctx, std::uint32_t samples,
                     std::function<void()> done) override {
    auto& rep = ctx.replica();
    auto n = rep.size();
    const float* grad = rep.grads();
    if (!acc_.empty()) {
      for (std::size_t i = 0; i < n; ++i)
        acc_[i] += grad[i];
      acc_samples_ += samples;
      grad = acc_.data();
    }
    // Downpour's replica keeps moving on its own copy between fetches.
    if (local_) {
      local_->step(rep.params(), rep.grads(), n, opts_.local_lr);
      actors::note_lr(ctx, opts_.local_lr);
    }
    auto step = ctx.steps() + 1; // this step, counted from 1
    if (opts_.sync || step % opts_.n_push == 0) {
      push(ctx, grad, acc_.empty() ? samples : acc_samples_);
      if (!acc_.empty()) {
        std::fill(acc_.begin(), acc_.end(), 0.0f);
        acc_samples_ = 0;
      }
    }
    done();
  }

private:
  /// A prefetch's state: none sent, in flight, or arrived (kept by fetch_).
  enum class next_state { none, under_way, ready };

  /// Sends the fetch of the next step, if it is due one and is not the
  /// worker's last (its reply would outlive the worker).
  void prefetch_next(worker_context& ctx) {
    auto next = ctx.steps() + 1;
    if (next_ != next_state::none || next >= ctx.max_steps()
        || next % opts_.n_fetch != 0)
      return;
    next_ = next_state::under_way;
    fetch_.start_kept(
        ctx,
        [this, &ctx] {
          next_ = next_state::ready;
          if (!waiting_)
            return;
          ctx.count_wait(nanoseconds_since(ctx.self(), wait_began_));
          std::exchange(waiting_, nullptr)();
        },
        false);
  }

  /// The prefetched parameters become the replica's.
  void install(worker_context& ctx) {
    auto& rep = ctx.replica();
    fetch_.install(rep.params());
    versions_ = fetched_;
    next_ = next_state::none;
  }

  void push(worker_context& ctx, const float* grad, std::uint32_t samples) {
    push_all(ctx, shards_, grad, ++seq_, versions_, samples,
             compressors_.empty() ? nullptr : &compressors_,
             log_ ? &*log_ : nullptr);
  }

public:
  void add_stats(worker_stats& out) const override {
    double sq = 0;
    for (auto& c : compressors_) {
      add_compression(out, c);
      sq += c.residual_norm() * c.residual_norm();
    }
    out.residual_norm = real{std::sqrt(sq)};
    out.pushes = seq_;
  }

  void on_finish(worker_context& ctx) override {
    // Leaves the shards' clocks (sync, SSP) after the last push, on the
    // same route: a synchronous round must not complete without that push,
    // and an untrack sent by the coordinator could overtake it (the push
    // may travel a direct link between nodes, net/peer_link.hpp).
    for (const auto& s : shards_)
      ctx.self()->send(s.handle, untrack_atom::value, ctx.id());
  }

  void quiesce(worker_context& ctx, std::function<void()> done) override {
    // CAF delivers one sender's messages in order: a flush answered means
    // every earlier push of this worker was received.
    auto left = std::make_shared<std::size_t>(shards_.size());
    auto one = [left, done] {
      if (--*left == 0)
        done();
    };
    if (shards_.empty()) {
      done();
      return;
    }
    flush_waits_.assign(shards_.size(), nullptr);
    for (std::size_t k = 0; k < shards_.size(); ++k) {
      // Settled once: by the answer, the error or the shard's restoration.
      auto answered = std::make_shared<bool>(false);
      auto once = [this, answered, k, one] {
        if (*answered)
          return;
        *answered = true;
        if (k < flush_waits_.size())
          flush_waits_[k] = nullptr;
        one();
      };
      flush_waits_[k] = once;
      ctx.self()
          ->request(shards_[k].handle, ctx.request_timeout(), flush_atom::value)
          .then([once](std::uint64_t) { once(); },
                [once](caf::error&) { once(); }); // lost: its save fails
    }
  }

  void save(optim::state_writer& w, const std::string& prefix) const override {
    w.put(prefix + "versions", versions_);
    w.put_u64(prefix + "seq", seq_);
    w.put(prefix + "acc", acc_);
    w.put_u64(prefix + "acc_samples", acc_samples_);
    if (local_)
      local_->save(w, prefix + "local.");
    for (std::size_t i = 0; i < compressors_.size(); ++i)
      compressors_[i].save(w, prefix + "compress." + std::to_string(i) + ".");
  }

  void load(const optim::state_reader& r, const std::string& prefix) override {
    auto versions = r.u64(prefix + "versions");
    if (versions.size() != versions_.size())
      throw r.error(prefix + "versions", "not one version per shard");
    versions_ = versions;
    seq_ = r.u64_scalar(prefix + "seq");
    auto acc = r.f32(prefix + "acc");
    if (acc.size() != acc_.size())
      throw r.error(prefix + "acc", "not the accumulator's size");
    acc_ = std::move(acc);
    acc_samples_
        = static_cast<std::uint32_t>(r.u64_scalar(prefix + "acc_samples"));
    if (local_)
      local_->load(r, prefix + "local.");
    for (std::size_t i = 0; i < compressors_.size(); ++i)
      compressors_[i].load(r, prefix + "compress." + std::to_string(i) + ".");
  }

private:
  std::vector<optim::compressor> compressors_;
  std::optional<push_log> log_; ///< recent pushes (--shard-replicas)

  std::vector<shard_ref> shards_;
  ps_policy_options opts_;
  /// Per shard, the version of the parameters the replica computes on.
  std::vector<std::uint64_t> versions_;
  /// Per shard, the version of the last fetch's replies (a prefetch's
  /// until its parameters are installed).
  std::vector<std::uint64_t> fetched_;
  std::vector<float> acc_; ///< gradient accumulator (n_push > 1)
  std::uint32_t acc_samples_ = 0;
  std::unique_ptr<optim::optimizer<float>> local_;
  std::uint64_t seq_ = 0;
  shard_fetch fetch_;
  bool refetch_ = false; ///< a rebind between fetches: the next step fetches
  next_state next_ = next_state::none;
  std::function<void()> waiting_; ///< a step waiting for the prefetch
  time_point wait_began_;
  /// A checkpoint's flush to shard k under way (settled by a rebind of k).
  std::vector<std::function<void()>> flush_waits_;
};

} // namespace

std::unique_ptr<comm_policy> make_ps_policy(std::vector<shard_ref> shards,
                                            ps_policy_options opts,
                                            std::size_t parameters) {
  return std::make_unique<ps_policy>(std::move(shards), std::move(opts),
                                     parameters);
}

} // namespace troupe::actors
