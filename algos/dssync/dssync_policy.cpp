// DS-Sync: group averaging on a shuffled partition (the base shared with SGP
// is in algos/peer_policy.hpp). After each local step a worker sends its
// parameters to its group of the round, waits for theirs (at most the
// request timeout) and takes the group mean.

#include "algos/dssync/dssync_policy.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>

#include "actors/comm_policy.hpp"
#include "algos/peer_policy.hpp"
#include "optim/gossip.hpp"
#include "optim/robust_mix.hpp"

namespace troupe::algos {

namespace {

/// Its messages' kinds in the probes (actors/probe.hpp).
const actors::msg_type group_kind = actors::message_kind("group");

} // namespace

using namespace messages;

bool digit_schedule(const actors::peer_policy_options& opts) noexcept {
  auto n = opts.workers, m = opts.group_size;
  if (m < 2 || n < m)
    return false;
  std::uint64_t power = 1;
  while (power < n)
    power *= m;
  return power == n;
}

std::vector<std::uint32_t>
dssync_groups(const actors::peer_policy_options& opts, std::uint64_t k) {
  auto n = opts.workers, m = opts.group_size;
  if (n <= 1 || m >= n)
    return std::vector<std::uint32_t>(n, 0);
  if (digit_schedule(opts))
    return optim::digit_groups(n, m, k);
  return optim::random_groups(n, m, k, opts.seed);
}

std::vector<std::uint32_t>
dssync_members(const actors::peer_policy_options& opts, std::uint64_t k,
               std::uint32_t rank) {
  if (digit_schedule(opts))
    return optim::digit_group_members(rank, opts.workers, opts.group_size, k);
  auto n = opts.workers, m = opts.group_size;
  if (rank >= n)
    throw std::invalid_argument("dssync_members: rank " + std::to_string(rank)
                                + " of " + std::to_string(n));
  if (n <= 1 || m >= n) { // one group
    std::vector<std::uint32_t> out(n);
    std::iota(out.begin(), out.end(), 0u);
    return out;
  }
  return optim::random_group_members(rank, n, m, k, opts.seed);
}

namespace {

using detail::peer_policy;

class dssync_policy : public peer_policy {
public:
  dssync_policy(actors::peer_policy_options o, std::size_t n,
                std::uint64_t last)
      : peer_policy(std::move(o), n), n_(n), last_step_(last) {
    if (opts_.mix_rule != "mean" && opts_.mix_rule != "cclip")
      rule_ = optim::make_aggregation_rule(opts_.mix_rule, opts_.mix_options);
  }

  /// A round's mean is taken before the next step's computation (where the
  /// worker may pause for a checkpoint while it waits for its group), and
  /// after the worker's last step in after_compute.
  void before_compute(actors::worker_context& ctx,
                      std::function<void()> ready) override {
    if (!pending_) {
      ready();
      return;
    }
    wait(ctx, std::move(ready));
  }

  void after_compute(actors::worker_context& ctx, std::uint32_t,
                     std::function<void()> done) override {
    auto& rep = ctx.replica();
    auto rate = lr(ctx);
    opt_->step(rep.params(), rep.grads(), rep.size(), rate);
    actors::note_lr(ctx, rate);
    round_ = ctx.steps();
    auto me = ctx.id();
    members_ = group_of(round_, me);
    group_msg m{me, round_, tensor{rep.params(), rep.size()}};
    auto bytes = wire_size(m);
    for (auto r : members_)
      if (r != me && live(r)) {
        ctx.count_sent(group_kind, bytes);
        ctx.self()->send(handle(r), m);
      }
    pending_ = true;
    if (round_ + 1 >= last_step_) {
      wait(ctx, std::move(done)); // no next step to take the mean before
      return;
    }
    done();
  }

  // -- checkpoints: no group copy in flight (the markers) --------------------

  /// The optimizer, the round whose mean is pending with its group, and
  /// the members' copies received for it and later rounds.
  void save(optim::state_writer& w, const std::string& prefix) const override {
    save_base(w, prefix);
    std::uint64_t scalars[] = {round_, next_round_, late_, pending_ ? 1u : 0u};
    w.put(prefix + "round", scalars, 4);
    std::vector<std::uint64_t> members(members_.begin(), members_.end());
    w.put(prefix + "members", members);
    std::vector<std::uint64_t> keys;
    std::vector<float> values;
    for (const auto& [round, got] : inbox_)
      for (const auto& [sender, v] : got) {
        if (v.size() != n_)
          continue; // a garbled copy: awaited again after a restore
        keys.insert(keys.end(), {round, sender});
        values.insert(values.end(), v.data(), v.data() + v.size());
      }
    w.put(prefix + "inbox.keys", keys);
    w.put(prefix + "inbox.values", values);
  }

  void load(const optim::state_reader& r, const std::string& prefix) override {
    load_base(r, prefix);
    auto scalars = r.u64(prefix + "round", 4);
    round_ = scalars[0];
    next_round_ = scalars[1];
    late_ = scalars[2];
    pending_ = scalars[3] != 0;
    members_.clear();
    for (auto m : r.u64(prefix + "members"))
      members_.push_back(static_cast<std::uint32_t>(m));
    auto keys = r.u64(prefix + "inbox.keys");
    auto values = r.f32(prefix + "inbox.values");
    if (keys.size() % 2 != 0 || values.size() != keys.size() / 2 * n_)
      throw r.error(prefix + "inbox.values", "not one model per copy");
    inbox_.clear();
    for (std::size_t i = 0; i < keys.size() / 2; ++i)
      inbox_[keys[2 * i]][static_cast<worker_id>(keys[2 * i + 1])]
          = tensor{values.data() + i * n_, n_};
  }

  caf::message_handler handlers(actors::worker_context& ctx) override {
    return marker_handler(ctx).or_else(caf::message_handler{
        [this, &ctx](group_msg& m) {
          auto scope
              = on_message(ctx.probe(), ctx.self(), group_kind, wire_size(m));
          if (!ctx.finished())
            on_group(ctx, m);
        },
    });
  }

  /// A group member's parameters of a round: kept until the round's mean.
  void on_group(actors::worker_context& ctx, group_msg& m) {
    if (!check_sender(ctx, "group copy", m.sender))
      return;
    // A garbled copy (wrong size, NaN) is kept as heard but empty: the
    // round does not wait out the request timeout for it.
    bool usable = acceptable(ctx, "group copy", m.sender, m.values,
                             ctx.replica().size());
    if (m.round < next_round_) {
      ++late_; // its round ended at the timeout: too late to count
      return;
    }
    // Kept only from a member of this worker's group of that round, and
    // not far ahead (a peer cannot fill the inbox with future rounds).
    bool member = m.round <= next_round_ + max_ahead;
    if (member) {
      const auto& group = group_of(m.round, ctx.id());
      member = std::binary_search(group.begin(), group.end(), m.sender);
    }
    if (!member) {
      ++discarded_;
      refused(ctx,
              "worker {}: ignoring a group copy from {} for round {} (not a "
              "member of its group of that round, or more than {} rounds "
              "ahead)",
              ctx.id(), m.sender, m.round, max_ahead);
      return;
    }
    if (!usable)
      ++discarded_;
    inbox_[m.round][m.sender] = usable ? std::move(m.values) : tensor{};
    recheck(ctx);
  }

protected:
  /// With random groups (any_peer), the members of this worker's groups
  /// of the rounds after its last: a worker with steps left (adopted from
  /// a lost one) meets them there. Later rounds find it at the deadline.
  std::vector<worker_id> told_of_finish(actors::worker_context& ctx) override {
    return rounds_ahead(ctx, round_ + 1, [&](std::uint64_t k) {
      return dssync_members(opts_, k, ctx.id());
    });
  }

  void recheck(actors::worker_context& ctx) override {
    if (!waiting_)
      return;
    auto& got = inbox_[round_];
    for (auto r : members_)
      if (r != ctx.id() && live(r) && got.count(r) == 0)
        return;
    average(ctx);
    resume(ctx);
  }

  std::string missing(actors::worker_context& ctx) const override {
    std::string out = "no parameters of round " + std::to_string(round_)
                      + " from group member(s)";
    auto it = inbox_.find(round_);
    for (auto r : members_)
      if (r != ctx.id() && live(r)
          && (it == inbox_.end() || it->second.count(r) == 0))
        out += " " + std::to_string(r);
    return out;
  }

  void give_up(actors::worker_context& ctx) override {
    average(ctx);
  }

private:
  /// x <- mean of the members' copies that arrived (own included), summed
  /// in rank order in double; or their robust mix (mix()). A Byzantine
  /// worker keeps its own model (it mixes nothing in).
  void average(actors::worker_context& ctx) {
    auto& rep = ctx.replica();
    auto n = rep.size();
    auto& got = inbox_[round_];
    if (rep.byzantine() || opts_.mix_rule != "mean") {
      if (!rep.byzantine())
        mix(ctx, got);
      end_round();
      return;
    }
    sum_.assign(n, 0.0);
    std::size_t count = 0;
    for (auto r : members_) {
      const float* v = nullptr;
      if (r == ctx.id())
        v = rep.params();
      else if (auto it = got.find(r); it != got.end() && it->second.size() == n)
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
    end_round();
  }

  void end_round() {
    next_round_ = round_ + 1;
    pending_ = false;
    inbox_.erase(inbox_.begin(), inbox_.upper_bound(round_));
  }

  /// Robust mixing of the members' copies that arrived: cclip moves x by
  /// ClippedGossip's step centred at x (each of the m members present
  /// weighs 1/m, its difference clipped to the radius); any other rule
  /// combines the copies, x among them.
  void mix(actors::worker_context& ctx,
           const std::map<worker_id, tensor>& got) {
    auto& rep = ctx.replica();
    std::vector<optim::neighbour_model> present;
    for (auto r : members_) {
      if (r == ctx.id()) {
        present.push_back({r, rep.params(), 0});
      } else if (auto it = got.find(r);
                 it != got.end() && it->second.size() == rep.size()) {
        present.push_back({r, it->second.data(), 0});
      }
    }
    if (present.size() < 2)
      return;
    if (opts_.mix_rule == "cclip") {
      std::vector<optim::neighbour_model> others;
      for (auto& m : present)
        if (m.rank != ctx.id()) {
          m.weight = 1.0 / static_cast<double>(present.size());
          others.push_back(m);
        }
      clip_mix(rep.params(), rep.size(), others);
    } else {
      auto dropped
          = optim::group_mix(*rule_, rep.params(), rep.size(), present);
      discarded_ += dropped.size();
    }
    ctx.count_mix();
  }

  /// `me`'s group of round k, computed once per round (the copies of a
  /// round and the worker's own step ask for the same round).
  const std::vector<std::uint32_t>& group_of(std::uint64_t k, worker_id me) {
    if (k != group_round_ || group_.empty()) {
      group_ = dssync_members(opts_, k, me);
      group_round_ = k;
    }
    return group_;
  }

  std::map<std::uint64_t, std::map<worker_id, tensor>> inbox_;
  /// group_of's cache: the members of round group_round_.
  std::vector<std::uint32_t> group_;
  std::uint64_t group_round_ = 0;
  std::vector<std::uint32_t> members_;
  std::vector<double> sum_;
  /// Rounds a group copy may be ahead of this worker's.
  static constexpr std::uint64_t max_ahead = 64;
  /// The rule of robust mixing other than mean and cclip.
  std::unique_ptr<optim::aggregation_rule> rule_;
  std::uint64_t round_ = 0, next_round_ = 0, late_ = 0;
  /// Round round_'s mean is still to take.
  bool pending_ = false;
  std::size_t n_ = 0;           ///< the model's size
  std::uint64_t last_step_ = 0; ///< the worker's planned steps
};
} // namespace

std::unique_ptr<actors::comm_policy>
make_dssync_policy(actors::peer_policy_options opts, std::size_t parameters,
                   std::uint64_t steps) {
  if (opts.group_size < 2)
    opts.group_size = 2;
  return std::make_unique<dssync_policy>(std::move(opts), parameters, steps);
}

} // namespace troupe::algos
