// LSGD's worker policy: local steps (the local policy) plus the handlers of
// the leaders' messages (lsgd_member_actor): the leader score, lead and
// pull. The group leaders and the leader board (group_leader.hpp,
// leader_board.hpp) elect and trigger; this is the workers' side.

#include "algos/lsgd/lsgd_policy.hpp"

#include <cmath>
#include <memory>

#include <caf/actor_cast.hpp>
#include <caf/sec.hpp>

#include "actors/comm_policy.hpp"
#include "actors/detail/log.hpp"
#include "algos/lsgd/lsgd_state.hpp"
#include "optim/consensus.hpp"

namespace troupe::algos {

namespace {

/// Its messages' kinds in the probes (actors/probe.hpp).
const actors::msg_type pull_kind = actors::message_kind("pull");

} // namespace

using namespace messages;

namespace {

class lsgd_policy : public actors::comm_policy {
public:
  lsgd_policy(std::unique_ptr<comm_policy> local, std::size_t score_window)
      : local_(std::move(local)), scores_(score_window) {}

  void before_compute(actors::worker_context& ctx,
                      std::function<void()> ready) override {
    local_->before_compute(ctx, std::move(ready));
  }

  void after_compute(actors::worker_context& ctx, std::uint32_t samples,
                     std::function<void()> done) override {
    local_->after_compute(ctx, samples, std::move(done));
  }

  void on_step(actors::worker_context&, double loss) override {
    scores_.add(loss);
  }

  void add_stats(worker_stats& out) const override {
    out.pulls = pulls_;
    out.pull_distance = real{pull_distance_};
  }

  /// The local optimizer, the score's window and the pull counters (no
  /// pull is in flight: the leaders' rounds are over, lsgd_run::quiesce).
  void save(optim::state_writer& w, const std::string& prefix) const override {
    local_->save(w, prefix + "local.");
    scores_.save(w, prefix + "score.");
    w.put_u64(prefix + "pulls", pulls_);
    w.put_u64(prefix + "leads", leads_);
    w.put_f64(prefix + "pull_distance", pull_distance_);
  }

  void load(const optim::state_reader& r, const std::string& prefix) override {
    local_->load(r, prefix + "local.");
    scores_.load(r, prefix + "score.");
    pulls_ = r.u64_scalar(prefix + "pulls");
    leads_ = r.u64_scalar(prefix + "leads");
    pull_distance_ = r.f64_scalar(prefix + "pull_distance");
  }

  caf::message_handler handlers(actors::worker_context& ctx) override {
    return {
        [this, &ctx](score_atom) {
          auto scope = on_message(ctx.probe(), ctx.self(), score_kind,
                                  actors::small_message_bytes);
          return score_msg{ctx.id(), ctx.steps(), real{scores_.mean()}};
        },
        [this, &ctx](const lead_msg& m) -> caf::result<ack_atom> {
          auto scope = on_message(ctx.probe(), ctx.self(), lead_kind,
                                  actors::small_message_bytes);
          return lead(ctx, m);
        },
        [this, &ctx](const pull_msg& m) {
          auto scope
              = on_message(ctx.probe(), ctx.self(), pull_kind, wire_size(m));
          pull(ctx, m);
          return ack_atom::value;
        },
    };
  }

private:
  /// As the elected leader: sends the parameters to every target and
  /// answers once each has applied them (or failed to answer): a round
  /// over is a round whose pulls are all in their targets' parameters, so
  /// a checkpoint taken between rounds has no pull in flight.
  caf::result<ack_atom> lead(actors::worker_context& ctx, const lead_msg& m) {
    auto& rep = ctx.replica();
    pull_msg p;
    p.round = m.round;
    p.global = m.global;
    p.leader = ctx.id();
    p.lambda = m.lambda;
    p.values = tensor{rep.params(), rep.size()};
    auto bytes = wire_size(p);
    auto me = caf::actor_cast<caf::actor>(ctx.self());
    auto promise = ctx.self()->make_response_promise<ack_atom>();
    auto left = std::make_shared<std::size_t>(1);
    auto one = [promise, left]() mutable {
      if (--*left == 0)
        promise.deliver(ack_atom::value);
    };
    for (auto& t : m.targets) {
      if (!t || t == me)
        continue;
      ctx.count_sent(pull_kind, bytes);
      ++*left;
      // Every target gets a copy of the same snapshot.
      ctx.self()
          ->request(caf::actor_cast<lsgd_member_actor>(t),
                    ctx.request_timeout(), p)
          .then([one](ack_atom) mutable { one(); },
                [one](caf::error&) mutable { one(); });
    }
    if (auto* probe = ctx.probe())
      probe->gauge("leads", static_cast<double>(++leads_));
    one();
    return promise;
  }

  /// x <- x - lambda * (x - leader); a leader never pulls toward itself,
  /// and a finished worker (lingering for its score and parameters) no
  /// longer moves.
  void pull(actors::worker_context& ctx, const pull_msg& m) {
    if (ctx.finished() || m.leader == ctx.id())
      return;
    auto& rep = ctx.replica();
    if (m.values.size() != rep.size() || !(m.lambda >= 0 && m.lambda <= 1)) {
      actors::detail::log().warn(
          "worker {}: ignoring a pull from worker {} with {} "
          "values and lambda {} (the replica has {})",
          ctx.id(), m.leader, m.values.size(), m.lambda, rep.size());
      if (auto* probe = ctx.probe())
        probe->error();
      return;
    }
    auto d = optim::distance(rep.params(), m.values.data(), rep.size());
    if (!std::isfinite(d)) {
      actors::detail::log().warn(
          "worker {}: ignoring a non-finite pull from worker {}", ctx.id(),
          m.leader);
      if (auto* probe = ctx.probe())
        probe->error();
      return;
    }
    optim::pull_toward(rep.params(), m.values.data(), m.lambda, rep.size());
    ++pulls_;
    pull_distance_ += d;
    if (auto* probe = ctx.probe()) {
      probe->gauge("pull_distance", d);
      probe->gauge("pulls", static_cast<double>(pulls_));
    }
  }

  std::unique_ptr<comm_policy> local_;
  /// The leader score: the running mean of the last losses.
  optim::loss_window scores_;
  std::uint64_t pulls_ = 0, leads_ = 0;
  double pull_distance_ = 0;
};

} // namespace

std::unique_ptr<actors::comm_policy> make_lsgd_policy(
    optim::optimizer_options optimizer, double lr, std::size_t parameters,
    std::optional<optim::schedule_options> schedule, std::size_t score_window) {
  return std::make_unique<lsgd_policy>(
      actors::make_local_policy(std::move(optimizer), lr, parameters,
                                std::move(schedule)),
      score_window);
}

} // namespace troupe::algos
