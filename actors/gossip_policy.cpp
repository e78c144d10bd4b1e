// The workers' policies of the peer-to-peer algorithms: SGP / overlap SGP
// (push-sum gossip on the time-varying exponential graph) and DS-Sync (group
// averaging on a shuffled partition). No server: the peers' handles arrive
// before the start, and a peer that finishes (leave) or dies (down) is no
// longer a target nor awaited. Every wait ends at the request timeout.

#include <chrono>
#include <cmath>
#include <map>
#include <string>

#include <caf/typed_event_based_actor.hpp>

#include "actors/comm_policy.hpp"
#include "actors/detail/log.hpp"
#include "optim/gossip.hpp"

namespace troupe::actors {

using namespace messages;

double comm_policy::weight() const noexcept {
  return std::nan("");
}

bool digit_schedule(const peer_policy_options& opts) noexcept {
  auto n = opts.workers, m = opts.group_size;
  if (m < 2 || n < m)
    return false;
  std::uint64_t power = 1;
  while (power < n)
    power *= m;
  return power == n;
}

std::vector<std::uint32_t> dssync_groups(const peer_policy_options& opts,
                                         std::uint64_t k) {
  auto n = opts.workers, m = opts.group_size;
  if (n <= 1 || m >= n)
    return std::vector<std::uint32_t>(n, 0);
  if (digit_schedule(opts))
    return optim::digit_groups(n, m, k);
  return optim::random_groups(n, m, k, opts.seed);
}

namespace {

using clock_type = std::chrono::steady_clock;

std::uint64_t nanoseconds_since(clock_type::time_point t0) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now()
                                                           - t0)
          .count());
}

/// What SGP and DS-Sync share: the peers and who is gone, the optimizer,
/// and one pending continuation with its deadline.
class peer_policy : public comm_policy {
public:
  peer_policy(peer_policy_options o, std::size_t n)
      : opts_(std::move(o)),
        opt_(optim::make_optimizer<float>(opts_.optimizer, n)) {
    if (opts_.schedule)
      schedule_.emplace(*opts_.schedule);
  }

  void on_peers(worker_context& ctx,
                const std::vector<caf::actor>& peers) override {
    peers_ = peers;
    gone_.assign(peers.size(), false);
    for (std::size_t r = 0; r < peers.size(); ++r)
      gone_[r] = !peers[r] || r == ctx.id();
    heard_.assign(peers.size(), 0);
  }

  void on_peer_gone(worker_context& ctx, worker_id r) override {
    if (r >= gone_.size() || gone_[r])
      return;
    gone_[r] = true;
    detail::log().debug("worker {}: peer {} left or died", ctx.id(), r);
    recheck(ctx);
  }

  void on_finish(worker_context& ctx) override {
    waiting_ = nullptr;
    for (std::size_t r = 0; r < peers_.size(); ++r)
      if (live(r)) {
        ctx.self()->send(caf::actor_cast<worker_actor>(peers_[r]),
                         leave_atom::value, ctx.id());
        ctx.count_sent(msg_type::leave, small_message_bytes);
      }
  }

  void on_timeout(worker_context& ctx, std::uint64_t seq) override {
    if (!waiting_ || seq != wait_seq_)
      return;
    detail::log().warn("worker {}: {} within the request timeout; going on "
                       "without",
                       ctx.id(), missing(ctx));
    ctx.count_timeout();
    give_up(ctx);
    resume(ctx);
  }

protected:
  /// Rank r is a peer we may send to and wait for.
  bool live(std::size_t r) const noexcept {
    return r < peers_.size() && !gone_[r];
  }

  double lr(worker_context& ctx) const {
    return schedule_ ? schedule_->lr(ctx.steps()) : opts_.lr;
  }

  /// Waits (with a deadline) until recheck() finds the condition met.
  void wait(worker_context& ctx, std::function<void()> k) {
    waiting_ = std::move(k);
    wait_start_ = clock_type::now();
    ++wait_seq_;
    recheck(ctx);
    if (!waiting_)
      return;
    ctx.schedule_timeout(wait_seq_);
    if (auto* p = ctx.probe())
      p->activity("waiting for peers");
  }

  /// Runs the pending continuation (the wait is counted).
  void resume(worker_context& ctx) {
    if (!waiting_)
      return;
    auto k = std::move(waiting_);
    waiting_ = nullptr;
    ctx.count_wait(nanoseconds_since(wait_start_));
    k();
  }

  /// Valid payload of n values from rank `sender`, all finite.
  bool acceptable(worker_context& ctx, const char* what, worker_id sender,
                  const tensor& values, std::size_t n) const {
    bool ok = sender < opts_.workers && values.size() == n;
    for (std::size_t i = 0; ok && i < n; ++i)
      ok = std::isfinite(values.data()[i]);
    if (!ok) {
      detail::log().warn("worker {}: ignoring a {} from {} with {} values "
                         "(expected {} finite values from a rank below {})",
                         ctx.id(), what, sender, values.size(), n,
                         opts_.workers);
      if (auto* p = ctx.probe())
        p->error();
    }
    return ok;
  }

  /// Resumes if the awaited messages are here.
  virtual void recheck(worker_context& ctx) = 0;
  /// The awaited messages, in words (for the timeout warning).
  virtual std::string missing(worker_context& ctx) const = 0;
  /// The deadline passed: consider the wait satisfied.
  virtual void give_up(worker_context& ctx) = 0;

  peer_policy_options opts_;
  std::unique_ptr<optim::optimizer<float>> opt_;
  std::optional<optim::schedule> schedule_;
  std::vector<caf::actor> peers_;
  std::vector<bool> gone_;
  /// Per rank: 1 + the last iteration / round heard from it (0: none).
  std::vector<std::uint64_t> heard_;
  std::function<void()> waiting_;
  std::uint64_t wait_seq_ = 0;
  clock_type::time_point wait_start_;
};

class sgp_policy : public peer_policy {
public:
  using peer_policy::peer_policy;

  void before_compute(worker_context& ctx,
                      std::function<void()> ready) override {
    init(ctx);
    wait_step_ = ctx.steps();
    if (satisfied(wait_step_)) {
      debias(ctx);
      ready();
      return;
    }
    wait(ctx, [this, &ctx, ready = std::move(ready)] {
      debias(ctx);
      ready();
    });
  }

  void after_compute(worker_context& ctx, std::uint32_t,
                     std::function<void()> done) override {
    auto& rep = ctx.replica();
    auto n = x_.size();
    // The gradient was taken at z; the step moves the numerator x.
    opt_->step(x_.data(), rep.grads(), n, lr(ctx));
    auto k = ctx.steps();
    std::vector<std::uint32_t> targets;
    for (auto j :
         optim::exponential_out_peers(ctx.id(), k, opts_.workers, opts_.peers))
      if (live(j))
        targets.push_back(j);
    // Keep 1 / (d + 1) of x and w; each out-peer gets the same share. A
    // gone peer's share stays here, so no mass is lost.
    auto p = 1.0 / static_cast<double>(targets.size() + 1);
    auto pf = static_cast<float>(p);
    for (auto& v : x_)
      v *= pf;
    w_ *= p;
    if (!targets.empty()) {
      gossip_msg m{ctx.id(), k, w_, tensor{x_.data(), n}};
      auto bytes = wire_size(m);
      for (auto j : targets) {
        ctx.count_sent(msg_type::gossip, bytes);
        ctx.self()->send(caf::actor_cast<worker_actor>(peers_[j]), m);
      }
    }
    debias(ctx);
    done();
  }

  void on_gossip(worker_context& ctx, gossip_msg& m) override {
    init(ctx);
    if (!acceptable(ctx, "push-sum share", m.sender, m.values, x_.size()))
      return;
    if (!(m.weight > 0) || !std::isfinite(m.weight)) {
      detail::log().warn("worker {}: ignoring a share from {} with weight {}",
                         ctx.id(), m.sender, m.weight);
      return;
    }
    const float* v = m.values.data();
    for (std::size_t i = 0; i < x_.size(); ++i)
      x_[i] += v[i];
    w_ += m.weight;
    if (m.sender < heard_.size())
      heard_[m.sender] = std::max(heard_[m.sender], m.iteration + 1);
    ctx.count_mix();
    if (!waiting_)
      debias(ctx); // the replica shows z between steps (fetches read it)
    recheck(ctx);
  }

  double weight() const noexcept override {
    return w_;
  }

protected:
  void recheck(worker_context& ctx) override {
    if (waiting_ && satisfied(wait_step_))
      resume(ctx);
  }

  std::string missing(worker_context& ctx) const override {
    std::string out = "no push-sum share of iteration "
                      + std::to_string(checked_) + " from in-peer(s)";
    for (auto j : optim::exponential_in_peers(ctx.id(), checked_, opts_.workers,
                                              opts_.peers))
      if (live(j) && heard_[j] <= checked_)
        out += " " + std::to_string(j);
    return out;
  }

  void give_up(worker_context&) override {
    checked_ = wait_step_ > opts_.overlap ? wait_step_ - opts_.overlap : 0;
  }

private:
  void init(worker_context& ctx) {
    if (!x_.empty())
      return;
    auto& rep = ctx.replica();
    x_.assign(rep.params(), rep.params() + rep.size());
    w_ = 1;
    rank_ = ctx.id();
    if (heard_.size() < opts_.workers)
      heard_.resize(opts_.workers, 0);
  }

  /// Before step k every in-peer's share of iterations t <= k - 1 - overlap
  /// has arrived (or the in-peer is gone).
  bool satisfied(std::uint64_t k) {
    if (peers_.empty())
      return true;
    while (checked_ + opts_.overlap < k) {
      for (auto j : optim::exponential_in_peers(rank_, checked_, opts_.workers,
                                                opts_.peers))
        if (live(j) && heard_[j] <= checked_)
          return false;
      ++checked_;
    }
    return true;
  }

  /// The replica's parameters <- z = x / w.
  void debias(worker_context& ctx) {
    if (!(w_ > 0) || !std::isfinite(w_)) {
      ctx.fail("the push-sum weight became " + std::to_string(w_));
      return;
    }
    auto& rep = ctx.replica();
    auto inv = 1.0 / w_;
    float* z = rep.params();
    for (std::size_t i = 0; i < x_.size(); ++i)
      z[i] = static_cast<float>(x_[i] * inv);
  }

  std::vector<float> x_;
  double w_ = 1;
  std::uint64_t checked_ = 0, wait_step_ = 0;
  worker_id rank_ = 0;
};

class dssync_policy : public peer_policy {
public:
  using peer_policy::peer_policy;

  void before_compute(worker_context&, std::function<void()> ready) override {
    ready();
  }

  void after_compute(worker_context& ctx, std::uint32_t,
                     std::function<void()> done) override {
    auto& rep = ctx.replica();
    opt_->step(rep.params(), rep.grads(), rep.size(), lr(ctx));
    round_ = ctx.steps();
    auto groups = dssync_groups(opts_, round_);
    members_.clear();
    auto me = ctx.id();
    for (std::uint32_t r = 0; r < groups.size(); ++r)
      if (groups[r] == groups.at(me))
        members_.push_back(r);
    group_msg m{me, round_, tensor{rep.params(), rep.size()}};
    auto bytes = wire_size(m);
    for (auto r : members_)
      if (r != me && live(r)) {
        ctx.count_sent(msg_type::group, bytes);
        ctx.self()->send(caf::actor_cast<worker_actor>(peers_[r]), m);
      }
    wait(ctx, std::move(done));
  }

  void on_group(worker_context& ctx, group_msg& m) override {
    if (!acceptable(ctx, "group copy", m.sender, m.values,
                    ctx.replica().size()))
      return;
    if (m.round < next_round_) {
      ++late_; // its round ended at the timeout: too late to count
      return;
    }
    inbox_[m.round][m.sender] = std::move(m.values);
    recheck(ctx);
  }

protected:
  void recheck(worker_context& ctx) override {
    if (!waiting_)
      return;
    auto& got = inbox_[round_];
    for (auto r : members_)
      if (r != ctx.id() && live(r) && got.count(r) == 0)
        return;
    average(ctx);
    resume(ctx);
  }

  std::string missing(worker_context& ctx) const override {
    std::string out = "no parameters of round " + std::to_string(round_)
                      + " from group member(s)";
    auto it = inbox_.find(round_);
    for (auto r : members_)
      if (r != ctx.id() && live(r)
          && (it == inbox_.end() || it->second.count(r) == 0))
        out += " " + std::to_string(r);
    return out;
  }

  void give_up(worker_context& ctx) override {
    average(ctx);
  }

private:
  /// x <- mean of the members' copies that arrived (own included), summed
  /// in rank order in double.
  void average(worker_context& ctx) {
    auto& rep = ctx.replica();
    auto n = rep.size();
    auto& got = inbox_[round_];
    sum_.assign(n, 0.0);
    std::size_t count = 0;
    for (auto r : members_) {
      const float* v = nullptr;
      if (r == ctx.id())
        v = rep.params();
      else if (auto it = got.find(r); it != got.end())
        v = it->second.data();
      if (!v)
        continue;
      for (std::size_t i = 0; i < n; ++i)
        sum_[i] += v[i];
      ++count;
    }
    float* x = rep.params();
    for (std::size_t i = 0; i < n; ++i)
      x[i] = static_cast<float>(sum_[i] / static_cast<double>(count));
    if (count > 1)
      ctx.count_mix();
    next_round_ = round_ + 1;
    inbox_.erase(inbox_.begin(), inbox_.upper_bound(round_));
  }

  std::map<std::uint64_t, std::map<worker_id, tensor>> inbox_;
  std::vector<std::uint32_t> members_;
  std::vector<double> sum_;
  std::uint64_t round_ = 0, next_round_ = 0, late_ = 0;
};

} // namespace

std::unique_ptr<comm_policy> make_sgp_policy(peer_policy_options opts,
                                             std::size_t parameters) {
  if (opts.peers < 1)
    opts.peers = 1;
  return std::make_unique<sgp_policy>(std::move(opts), parameters);
}

std::unique_ptr<comm_policy> make_dssync_policy(peer_policy_options opts,
                                                std::size_t parameters) {
  if (opts.group_size < 2)
    opts.group_size = 2;
  return std::make_unique<dssync_policy>(std::move(opts), parameters);
}

} // namespace troupe::actors
