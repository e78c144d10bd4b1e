// All-reduce SGD: each step's gradients summed by a ring all-reduce among
// the workers, no server (the base shared with SGP and DS-Sync is in
// algos/peer_policy.hpp). The peers' handles arrive before the start; a
// worker takes chunks only from its ring predecessor, one message after
// the other, and a step cannot complete without every worker: a lost
// worker, an unusable chunk or a wait past the request timeout ends the
// worker with an error, and the coordinator ends the job with it.

#include "algos/allreduce/allreduce_policy.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <string>
#include <vector>

#include "actors/detail/log.hpp"
#include "algos/allreduce/ring.hpp"
#include "algos/peer_policy.hpp"

namespace troupe::algos {

namespace {

/// Its messages' kind in the probes (actors/probe.hpp).
const actors::msg_type ring_kind = actors::message_kind("ring");

using namespace messages;
using detail::peer_policy;

/// Examples one worker's step may count (the core's counts are 32-bit).
constexpr std::uint64_t max_worker_samples = std::uint64_t{1} << 32;

class allreduce_policy : public peer_policy {
public:
  allreduce_policy(actors::peer_policy_options o, std::size_t n)
      : peer_policy(std::move(o), n), ring_(opts_.workers, n), sum_(n),
        mean_(n), count_(ring_.ranks(), 0) {}

  void before_compute(actors::worker_context&,
                      std::function<void()> ready) override {
    ready(); // the last step's update is applied: every replica is equal
  }

  void after_compute(actors::worker_context& ctx, std::uint32_t samples,
                     std::function<void()> done) override {
    step_ = ctx.steps();
    if (ring_.ranks() == 1) {
      apply(ctx, ctx.replica().grads());
      done();
      return;
    }
    if (step_ != recv_step_) {
      ctx.fail("ring all-reduce: the worker is at step " + std::to_string(step_)
               + ", its ring at step " + std::to_string(recv_step_));
      return;
    }
    contribute(ctx, samples);
    exchanging_ = true;
    taken_ = 0;
    send(ctx, 0);
    if (ctx.finished())
      return;
    wait(ctx, [this, &ctx, done = std::move(done)] {
      finish_step(ctx);
      done();
    });
    drain(ctx);
  }

  caf::message_handler handlers(actors::worker_context& ctx) override {
    return {[this, &ctx](ring_chunk_msg& m) {
      auto scope = actors::on_message(ctx.probe(), ctx.self(), ring_kind,
                                      wire_size(m));
      if (!ctx.finished())
        on_chunk(ctx, m);
    }};
  }

  /// A peer that finished or died: the step under way cannot complete,
  /// unless it is the worker's last and the peer's part of it is here.
  void on_peer_gone(actors::worker_context& ctx,
                    messages::worker_id r) override {
    auto* e = peer(r);
    if (!e || e->gone)
      return;
    e->gone = true;
    if (ctx.finished() || ring_.ranks() == 1)
      return;
    bool owed = r == ring_.left(ctx.id()) && arrived_ < ring_.steps();
    if (exchanging_ && step_ + 1 >= ctx.max_steps() && !owed)
      return;
    lost(ctx, r);
  }

  void on_timeout(actors::worker_context& ctx, std::uint64_t seq) override {
    if (!waiting_ || seq != wait_seq_)
      return;
    ctx.count_timeout();
    waiting_ = nullptr;
    ctx.fail("ring all-reduce: " + missing(ctx)
             + " within the request timeout; a step needs every worker");
  }

  /// No leave message: every worker takes the same steps, and a stopped
  /// job stops every worker.
  void on_finish(actors::worker_context&) override {
    waiting_ = nullptr;
  }

protected:
  void recheck(actors::worker_context& ctx) override {
    if (waiting_ && exchanging_ && taken_ == ring_.steps())
      resume(ctx);
  }

  std::string missing(actors::worker_context& ctx) const override {
    auto k = arrived_;
    return "no message " + std::to_string(k + 1) + " of "
           + std::to_string(ring_.steps()) + " (" + ring_position(ring_, k)
           + ") of step " + std::to_string(recv_step_)
           + " from ring predecessor " + std::to_string(ring_.left(ctx.id()));
  }

  void give_up(actors::worker_context& ctx) override {
    ctx.fail("ring all-reduce: " + missing(ctx));
  }

private:
  /// The step's own part: the mean gradient times its examples (a
  /// gradient that is not finite adds nothing, and counts 0 examples).
  void contribute(actors::worker_context& ctx, std::uint32_t samples) {
    const float* g = ctx.replica().grads();
    auto n = ring_.length();
    bool finite
        = std::all_of(g, g + n, [](float v) { return std::isfinite(v); });
    if (!finite) {
      if (++skipped_ <= max_logged)
        actors::detail::log().warn(
            "worker {}: step {}'s gradient is not finite; it adds nothing to "
            "the step's all-reduce",
            ctx.id(), step_);
      std::fill(sum_.begin(), sum_.end(), 0.0f);
      samples = 0;
    } else {
      auto weight = static_cast<float>(samples);
      for (std::size_t i = 0; i < n; ++i)
        sum_[i] = g[i] * weight;
    }
    std::fill(count_.begin(), count_.end(), std::uint64_t{samples});
  }

  /// Sends the worker's message k of the step to its successor.
  void send(actors::worker_context& ctx, std::size_t k) {
    auto me = ctx.id();
    auto to = ring_.right(me);
    if (!live(to)) {
      lost(ctx, static_cast<messages::worker_id>(to));
      return;
    }
    auto c = ring_.at(me, k).send_chunk;
    auto range = ring_.chunk(c);
    ring_chunk_msg m{me,
                     step_,
                     static_cast<std::uint8_t>(ring_phase_of(ring_, k)),
                     ring_hop_of(ring_, k),
                     static_cast<std::uint32_t>(c),
                     count_[c],
                     tensor{sum_.data() + range.offset, range.size}};
    ctx.count_sent(ring_kind, wire_size(m));
    ctx.self()->send(handle<ring_peer_actor>(to), std::move(m));
  }

  /// Keeps the predecessor's next message (taken once the worker's own
  /// part is in), or refuses it.
  void on_chunk(actors::worker_context& ctx, ring_chunk_msg& m) {
    auto me = ctx.id();
    auto why = ring_header_problem(ring_, me, recv_step_, arrived_, m);
    if (why.empty() && !sent_by(ctx, m.sender))
      why = "not sent by that worker's actor";
    if (!why.empty()) {
      ++discarded_;
      refused(ctx, "worker {}: ignoring {}: {}", me, to_string(m), why);
      return;
    }
    auto bad
        = ring_payload_problem(ring_, m, max_worker_samples * ring_.ranks());
    if (!bad.empty()) {
      ++discarded_;
      ctx.fail("ring all-reduce: refused " + to_string(m)
               + " from the ring predecessor: " + bad + "; step "
               + std::to_string(recv_step_) + " cannot complete without it");
      return;
    }
    ++arrived_;
    queue_.push_back(std::move(m));
    drain(ctx);
  }

  /// Takes the kept messages while the step's exchange is under way.
  void drain(actors::worker_context& ctx) {
    while (exchanging_ && !queue_.empty() && !ctx.finished()) {
      auto m = std::move(queue_.front());
      queue_.pop_front();
      take(ctx, m);
    }
    recheck(ctx);
  }

  /// Message k: a partial sum plus the worker's own part (reduce-scatter)
  /// or a chunk's whole sum (all-gather); passed on but for the last.
  void take(actors::worker_context& ctx, const ring_chunk_msg& m) {
    auto k = taken_++;
    auto range = ring_.chunk(m.chunk);
    float* x = sum_.data() + range.offset;
    const float* v = m.values.data();
    auto len = range.size;
    if (ring_.at(ctx.id(), k).reduce) {
      for (std::size_t i = 0; i < len; ++i)
        x[i] = v[i] + x[i];
      count_[m.chunk] += m.samples;
    } else {
      std::copy(v, v + len, x);
      count_[m.chunk] = m.samples;
    }
    if (k + 1 < ring_.steps())
      send(ctx, k + 1);
  }

  /// Every chunk's sum is here: x <- the optimizer's step with the sum
  /// over the examples of the step, the same on every worker.
  void finish_step(actors::worker_context& ctx) {
    exchanging_ = false;
    recv_step_ = step_ + 1;
    arrived_ = 0;
    auto total = count_[0];
    for (std::size_t c = 1; c < ring_.ranks(); ++c)
      if (count_[c] != total) {
        ctx.fail("ring all-reduce: the chunks of step " + std::to_string(step_)
                 + " sum different numbers of examples ("
                 + std::to_string(total) + " and " + std::to_string(count_[c])
                 + ")");
        return;
      }
    if (total == 0) {
      actors::detail::log().warn("worker {}: no gradient of step {} was "
                                 "finite; no update",
                                 ctx.id(), step_);
      return;
    }
    auto examples = static_cast<float>(total);
    for (std::size_t i = 0; i < ring_.length(); ++i)
      mean_[i] = sum_[i] / examples;
    apply(ctx, mean_.data());
    ctx.count_mix();
  }

  void apply(actors::worker_context& ctx, const float* g) {
    auto& rep = ctx.replica();
    auto rate = lr(ctx);
    opt_->step(rep.params(), g, rep.size(), rate);
    actors::note_lr(ctx, rate);
  }

  void lost(actors::worker_context& ctx, messages::worker_id r) {
    waiting_ = nullptr;
    ctx.fail("ring all-reduce: worker " + std::to_string(r)
             + " left or died at step " + std::to_string(ctx.steps())
             + "; every step needs every worker's gradient, so the job ends "
               "(all-reduce SGD does not go on without a worker)");
  }

  optim::ring_plan ring_;
  /// The step's chunks: partial or whole sums, the worker's own part.
  std::vector<float> sum_;
  std::vector<float> mean_;
  /// Examples behind each chunk's values in sum_.
  std::vector<std::uint64_t> count_;
  /// The predecessor's messages of step recv_step_ kept, not yet taken.
  std::deque<ring_chunk_msg> queue_;
  std::uint64_t step_ = 0;      ///< the step being exchanged
  std::uint64_t recv_step_ = 0; ///< the step the predecessor's messages are of
  std::size_t arrived_ = 0;     ///< its messages kept (taken or queued)
  std::size_t taken_ = 0;       ///< its messages taken
  bool exchanging_ = false;
  std::uint64_t skipped_ = 0; ///< own gradients that were not finite
};

} // namespace

std::unique_ptr<actors::comm_policy>
make_allreduce_policy(actors::peer_policy_options opts,
                      std::size_t parameters) {
  if (opts.workers == 0)
    opts.workers = 1;
  // (optim::ring_plan throws, naming them, for fewer values than workers.)
  return std::make_unique<allreduce_policy>(std::move(opts), parameters);
}

} // namespace troupe::algos
