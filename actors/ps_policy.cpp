#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

#include <caf/actor_cast.hpp>
#include <caf/make_message.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/comm_policy.hpp"
#include "actors/shard_fetch.hpp"
#include "optim/optimizer.hpp"

namespace troupe::actors {

using namespace messages;

void fetch_all(worker_context& ctx, const std::vector<shard_ref>& shards,
               float* dest, std::vector<std::uint64_t>& versions,
               std::function<void()> done,
               std::function<void(std::size_t, std::string)> on_error,
               std::shared_ptr<const bool> cancelled) {
  auto remaining = std::make_shared<std::size_t>(shards.size());
  auto t0 = std::chrono::steady_clock::now();
  auto* versions_out = &versions;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    auto range = shards[i].range;
    fetch_msg f;
    f.worker = ctx.id();
    f.offset = range.offset;
    f.size = range.size;
    f.clock = ctx.clock();
    ctx.count_sent(msg_type::fetch, wire_size(f));
    ctx.self()
        ->request(shards[i].handle, ctx.request_timeout(), f)
        .then(
            [&ctx, i, range, dest, versions_out, remaining, done, t0,
             cancelled](params_msg& p) {
              auto scope = on_message(ctx.probe(), ctx.self(), msg_type::params,
                                      wire_size(p));
              if (cancelled && *cancelled)
                return;
              if (p.offset != range.offset || p.values.size() != range.size) {
                ctx.fail("shard " + std::to_string(i)
                         + " answered a fetch with the wrong range");
                return;
              }
              std::memcpy(dest + range.offset, p.values.data(),
                          range.size * sizeof(float));
              (*versions_out)[i] = p.version;
              if (--*remaining > 0)
                return;
              ctx.count_wait(static_cast<std::uint64_t>(
                  std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - t0)
                      .count()));
              done();
            },
            [&ctx, i, on_error, cancelled](caf::error& err) {
              if (cancelled && *cancelled)
                return;
              if (auto* probe = ctx.probe())
                probe->error();
              auto why = "fetch from shard " + std::to_string(i)
                         + " failed: " + ctx.self()->system().render(err);
              if (on_error)
                on_error(i, std::move(why));
              else
                ctx.fail(std::move(why));
            });
  }
}

push_log::push_log(std::size_t shards, std::size_t capacity)
    : sent_(shards), capacity_(capacity) {}

std::size_t push_log::capacity_for(std::size_t replay,
                                   std::size_t parameters) noexcept {
  constexpr std::size_t budget = std::size_t{32} << 20;
  auto cap = std::max<std::size_t>(
      budget / (std::max<std::size_t>(parameters, 1) * sizeof(float)), 4);
  return std::min(replay, cap);
}

void push_log::keep(std::size_t i, caf::message m) {
  auto& q = sent_.at(i);
  q.push_back(std::move(m));
  while (q.size() > capacity_)
    q.pop_front();
}

std::size_t push_log::resend(worker_context& ctx, std::size_t i,
                             const caf::actor& to) const {
  for (const auto& m : sent_.at(i))
    ctx.self()->send(to, m);
  return sent_.at(i).size();
}

namespace {

/// Sends push `x` to shard i, keeping it in `kept` if given.
template <class Msg>
void send_push(worker_context& ctx, const shard_ref& shard, std::size_t i,
               Msg&& x, push_log* kept) {
  ctx.count_sent(msg_type::push, wire_size(x));
  // A shard in this process is lost only with this worker: nothing kept
  // (a kept message would also be copied on delivery, to be changed).
  if (!kept || shard.handle.node() == ctx.self()->node()) {
    ctx.self()->send(shard.handle, std::forward<Msg>(x));
    return;
  }
  auto m = caf::make_message(std::forward<Msg>(x));
  kept->keep(i, m);
  ctx.self()->send(caf::actor_cast<caf::actor>(shard.handle), std::move(m));
}

} // namespace

void push_all(worker_context& ctx, const std::vector<shard_ref>& shards,
              const float* values, std::uint64_t seq,
              const std::vector<std::uint64_t>& versions, std::uint32_t samples,
              std::vector<optim::compressor>* compressors, push_log* kept) {
  for (std::size_t i = 0; i < shards.size(); ++i) {
    auto& r = shards[i].range;
    push_msg p;
    p.worker = ctx.id();
    p.seq = seq;
    p.version = versions[i];
    p.offset = r.offset;
    p.clock = ctx.clock() + 1;
    p.samples = samples;
    if (compressors) {
      compressed_push_msg c{p.worker, p.seq,     p.version, p.offset,
                            p.clock,  p.samples, r.size,    {}};
      try {
        c.packed = (*compressors)[i].compress(values + r.offset, r.size);
        send_push(ctx, shards[i], i, std::move(c), kept);
        continue;
      } catch (const std::invalid_argument&) {
        // Non-finite values: sent dense, so the shard rejects and counts
        // them as for an uncompressed push; the residual is untouched.
      }
    }
    p.values = tensor{values + r.offset, r.size};
    send_push(ctx, shards[i], i, std::move(p), kept);
  }
}

void add_compression(worker_stats& out, const optim::compressor& c) {
  const auto& s = c.stats();
  out.dense_fc += s.dense_bytes[0];
  out.packed_fc += s.packed_bytes[0];
  out.dense_conv += s.dense_bytes[1];
  out.packed_conv += s.packed_bytes[1];
}

namespace {

class ps_policy : public comm_policy {
public:
  ps_policy(std::vector<shard_ref> shards, ps_policy_options opts,
            std::size_t n)
      : shards_(std::move(shards)), opts_(std::move(opts)),
        versions_(shards_.size(), 0), fetch_(shards_, versions_) {
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
    if (!opts_.sync && ctx.steps() % opts_.n_fetch != 0 && !refetch_) {
      ready();
      return;
    }
    refetch_ = false;
    fetch_.start(ctx, ctx.replica().params(), std::move(ready));
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
  std::vector<std::uint64_t> versions_; ///< per shard, of the last fetch
  std::vector<float> acc_;              ///< gradient accumulator (n_push > 1)
  std::uint32_t acc_samples_ = 0;
  std::unique_ptr<optim::optimizer<float>> local_;
  std::uint64_t seq_ = 0;
  shard_fetch fetch_;
  bool refetch_ = false; ///< a rebind between fetches: the next step fetches
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
