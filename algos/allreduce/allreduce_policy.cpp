// All-reduce SGD: each step's gradients summed by a ring all-reduce among
// the workers, no server (the base shared with SGP and DS-Sync is in
// algos/peer_policy.hpp). A worker takes chunks only from its ring
// predecessor, in order; a step needs every worker: a lost worker, an
// unusable chunk or a wait past the request timeout ends the job with an
// error. A checkpoint pauses all after one step agreed on the ring
// (ring_pause.hpp).

#include "algos/allreduce/allreduce_policy.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <string>
#include <vector>

#include "actors/detail/log.hpp"
#include "algos/allreduce/reducer.hpp"
#include "algos/allreduce/ring.hpp"
#include "algos/allreduce/ring_pause.hpp"
#include "algos/peer_policy.hpp"
#include "optim/state_file.hpp"

namespace troupe::algos {

namespace {

/// Its messages' kind in the probes (actors/probe.hpp).
const actors::msg_type ring_kind = actors::message_kind("ring");

using namespace messages;
using detail::peer_policy;

class allreduce_policy : public peer_policy {
public:
  allreduce_policy(actors::peer_policy_options o, const reducer_options& ro,
                   std::size_t n, std::uint32_t rank)
      : peer_policy(std::move(o), n),
        red_(make_reducer(ro, n, std::max<std::uint32_t>(opts_.workers, 1),
                          rank)),
        mean_(n), count_(std::max<std::uint32_t>(opts_.workers, 1), 0) {
    // One ring plan per exchange of a step, each at least a value per
    // worker (a shorter vector is padded with zeros).
    std::size_t longest = 0;
    for (std::size_t e = 0; e < red_->exchanges(); ++e) {
      auto len = std::max<std::size_t>(red_->length(e), count_.size());
      plans_.emplace_back(count_.size(), len);
      longest = std::max(longest, len);
    }
    sum_.assign(longest, 0.0f);
    next_.assign(longest, 0.0f);
  }

  void before_compute(actors::worker_context& ctx,
                      std::function<void()> ready) override {
    // The last step's update is applied: every replica is equal.
    if (pause_.hold(ctx.steps(), ready)) // (a ring of one never holds)
      return;
    ready();
  }

  bool pause_here(actors::worker_context& ctx) override {
    return plans_[0].ranks() == 1 || pause_.here(ctx.steps());
  }

  /// Paused after the agreed step (nothing in flight: every chunk of it was
  /// taken, none of the next sent), or the checkpoint was given up.
  void quiesce(actors::worker_context&, std::function<void()> done) override {
    pause_.paused();
    done();
  }
  void on_resume(actors::worker_context&) override {
    pause_.paused();
  }

  void save(optim::state_writer& w, const std::string& prefix) const override {
    save_base(w, prefix);
    red_->save(w, prefix + "reducer.");
    w.put(prefix + "ring", std::vector<std::uint64_t>{recv_seq_, skipped_});
  }

  void load(const optim::state_reader& r, const std::string& prefix) override {
    load_base(r, prefix);
    red_->load(r, prefix + "reducer.");
    auto ring = r.u64(prefix + "ring", 2);
    recv_seq_ = ring[0];
    skipped_ = ring[1];
  }

  void after_compute(actors::worker_context& ctx, std::uint32_t samples,
                     std::function<void()> done) override {
    step_ = ctx.steps();
    ex_ = 0;
    contribute(ctx, samples);
    if (plans_[0].ranks() == 1) { // a ring of one: the sums are its own
      while (exchanged(ctx)) {
      }
      done();
      return;
    }
    if (seq() != recv_seq_) {
      ctx.fail("ring all-reduce: the worker is at exchange "
               + std::to_string(seq()) + ", its ring at exchange "
               + std::to_string(recv_seq_));
      return;
    }
    exchanging_ = true;
    taken_ = 0;
    send(ctx, 0);
    if (ctx.finished())
      return;
    done_ = std::move(done);
    wait_exchange(ctx);
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
    if (ctx.finished() || plan().ranks() == 1)
      return;
    bool owed = r == plan().left(ctx.id()) && arrived_ < plan().steps();
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

  /// No leave message: all take the same steps; a stopped job stops all.
  void on_finish(actors::worker_context&) override {
    waiting_ = nullptr;
  }

protected:
  void recheck(actors::worker_context& ctx) override {
    if (waiting_ && exchanging_ && taken_ == plan().steps())
      resume(ctx);
  }

  std::string missing(actors::worker_context& ctx) const override {
    return ring_missing(plan(), ctx.id(), arrived_, recv_seq_, plans_.size());
  }

  void give_up(actors::worker_context& ctx) override {
    ctx.fail("ring all-reduce: " + missing(ctx));
  }

private:
  /// The step's own part of its first exchange: the reducer's vector of its
  /// gradient weighed by its examples (not finite: nothing, 0 examples).
  void contribute(actors::worker_context& ctx, std::uint32_t samples) {
    const float* g = ctx.replica().grads();
    auto n = mean_.size();
    bool finite
        = std::all_of(g, g + n, [](float v) { return std::isfinite(v); });
    if (!finite) {
      if (++skipped_ <= max_logged)
        actors::detail::log().warn(
            "worker {}: step {}'s gradient is not finite; it adds nothing to "
            "the step's all-reduce",
            ctx.id(), step_);
      samples = 0;
    }
    std::fill(sum_.begin(), sum_.end(), 0.0f);
    if (red_->wants_pass()) {
      auto pass = ctx.replica().last_pass();
      if (pass.model != nullptr)
        red_->take_pass(*pass.model, *pass.batch);
    }
    red_->begin(step_, g, samples, sum_.data());
    samples_ = samples;
    std::fill(count_.begin(), count_.end(), std::uint64_t{samples});
  }

  /// The exchange under way, counted over the job: step * exchanges + e.
  std::uint64_t seq() const noexcept {
    return step_ * plans_.size() + ex_;
  }

  /// The plan of the exchange the ring receives.
  const optim::ring_plan& plan() const noexcept {
    return plans_[recv_seq_ % plans_.size()];
  }

  /// Waits for the exchange under way; then the next one or the step's
  /// end.
  void wait_exchange(actors::worker_context& ctx) {
    wait(ctx, [this, &ctx] {
      if (exchanged(ctx)) {
        exchanging_ = true;
        taken_ = 0;
        send(ctx, 0);
        if (ctx.finished())
          return;
        wait_exchange(ctx);
        drain(ctx);
        return;
      }
      auto k = std::move(done_);
      done_ = nullptr;
      if (k && !ctx.finished())
        k();
    });
  }

  /// Sends the worker's message k of the step to its successor.
  void send(actors::worker_context& ctx, std::size_t k) {
    auto me = ctx.id();
    const auto& ring = plans_[ex_];
    auto to = ring.right(me);
    if (!live(to)) {
      lost(ctx, static_cast<messages::worker_id>(to));
      return;
    }
    auto c = ring.at(me, k).send_chunk;
    auto range = ring.chunk(c);
    ring_chunk_msg m{me,
                     seq(),
                     static_cast<std::uint8_t>(ring_phase_of(ring, k)),
                     ring_hop_of(ring, k),
                     static_cast<std::uint32_t>(c),
                     count_[c],
                     tensor{sum_.data() + range.offset, range.size},
                     pause_.at()};
    ctx.count_sent(ring_kind, wire_size(m));
    ctx.self()->send(handle<ring_peer_actor>(to), std::move(m));
  }

  /// Keeps the predecessor's next message (taken once the worker's own
  /// part is in), or refuses it.
  void on_chunk(actors::worker_context& ctx, ring_chunk_msg& m) {
    auto me = ctx.id();
    auto why = ring_header_problem(plan(), me, recv_seq_, arrived_, m);
    if (why.empty() && !sent_by(ctx, m.sender))
      why = "not sent by that worker's actor";
    if (!why.empty()) {
      ++discarded_;
      refused(ctx, "worker {}: ignoring {}: {}", me, to_string(m), why);
      return;
    }
    auto bad = ring_payload_problem(plan(), m,
                                    ring_max_worker_samples * plan().ranks());
    if (!bad.empty()) {
      ++discarded_;
      ctx.fail("ring all-reduce: refused " + to_string(m)
               + " from the ring predecessor: " + bad + "; exchange "
               + std::to_string(recv_seq_) + " cannot complete without it");
      return;
    }
    pause_.heard(m.pause_at, ctx.steps());
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
    const auto& ring = plans_[ex_];
    auto range = ring.chunk(m.chunk);
    float* x = sum_.data() + range.offset;
    const float* v = m.values.data();
    auto len = range.size;
    if (ring.at(ctx.id(), k).reduce) {
      for (std::size_t i = 0; i < len; ++i)
        x[i] = v[i] + x[i];
      count_[m.chunk] += m.samples;
    } else {
      std::copy(v, v + len, x);
      count_[m.chunk] = m.samples;
    }
    if (k + 1 < ring.steps())
      send(ctx, k + 1);
  }

  /// Every chunk's sum of the exchange is here: the reducer makes the next
  /// exchange's vector (true), or the step's mean gradient, which the
  /// optimizer applies, the same on every worker (false).
  bool exchanged(actors::worker_context& ctx) {
    exchanging_ = false;
    if (plans_[0].ranks() > 1) {
      recv_seq_ = seq() + 1;
      arrived_ = 0;
    }
    auto total = count_[0];
    auto problem = ring_counts_problem(count_, step_);
    if (!problem.empty()) {
      ctx.fail("ring all-reduce: " + problem);
      return false;
    }
    if (red_->next(ex_, sum_.data(), total, next_.data(), mean_.data(),
                   problem)) {
      ++ex_;
      std::fill(sum_.begin(), sum_.end(), 0.0f);
      std::copy(next_.begin(),
                next_.begin() + static_cast<std::ptrdiff_t>(red_->length(ex_)),
                sum_.begin());
      std::fill(count_.begin(), count_.end(), samples_);
      return true;
    }
    if (!problem.empty()) {
      ctx.fail("ring all-reduce: step " + std::to_string(step_) + ": "
               + problem);
      return false;
    }
    if (total == 0) {
      actors::detail::log().warn(
          "worker {}: no gradient of step {} was finite; no update", ctx.id(),
          step_);
      return false;
    }
    apply(ctx, mean_.data());
    if (plans_[0].ranks() > 1)
      ctx.count_mix();
    return false;
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

  std::unique_ptr<reducer> red_;
  /// The ring plan of each exchange of a step.
  std::vector<optim::ring_plan> plans_;
  /// The exchange's chunks: partial or whole sums, the worker's own part;
  /// the next exchange's vector; the step's mean gradient.
  std::vector<float> sum_, next_, mean_;
  /// Examples behind each chunk's values in sum_.
  std::vector<std::uint64_t> count_;
  /// The predecessor's messages of exchange recv_seq_ kept, not yet taken.
  std::deque<ring_chunk_msg> queue_;
  std::uint64_t step_ = 0;     ///< the step being exchanged
  std::size_t ex_ = 0;         ///< its exchange under way
  std::uint64_t recv_seq_ = 0; ///< the exchange its predecessor is at
  std::uint64_t samples_ = 0;  ///< the step's own examples
  std::function<void()> done_; ///< the step's rest, after its exchanges
  std::size_t arrived_ = 0;    ///< its messages kept (taken or queued)
  std::size_t taken_ = 0;      ///< its messages taken
  bool exchanging_ = false;
  std::uint64_t skipped_ = 0; ///< own gradients that were not finite
  ring_pause pause_;          ///< a checkpoint's pause, agreed on the ring
};

} // namespace

std::unique_ptr<actors::comm_policy>
make_allreduce_policy(actors::peer_policy_options opts,
                      const reducer_options& reduce, std::size_t parameters,
                      std::uint32_t rank) {
  if (opts.workers == 0)
    opts.workers = 1;
  return std::make_unique<allreduce_policy>(std::move(opts), reduce, parameters,
                                            rank);
}

} // namespace troupe::algos
