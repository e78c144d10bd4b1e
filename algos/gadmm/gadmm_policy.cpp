// GADMM's worker policy: the chain, the iteration's start (the previous
// iteration's duals, a new chain's duals, the neighbours' models), the
// augmented gradient of each local step and the end of an iteration (the
// new model to the neighbours, a tail's duals). The waits take at most the
// request timeout; then a missing model is replaced by the last one heard
// and its edge's dual skips the step.

#include "algos/gadmm/gadmm_policy.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "algos/gadmm/gadmm_state.hpp"
#include "algos/peer_policy.hpp"
#include "optim/gadmm.hpp"

namespace troupe::algos {

namespace {

const actors::msg_type model_kind = actors::message_kind("chain");
const actors::msg_type dual_kind = actors::message_kind("dual");

using namespace messages;
using detail::peer_policy;

class gadmm_policy : public peer_policy {
public:
  gadmm_policy(actors::peer_policy_options o, gadmm_settings g, std::size_t n,
               std::uint64_t last)
      : peer_policy(std::move(o), n), g_(g), n_(n), last_step_(last),
        chains_(opts_.workers, g_, opts_.seed), st_(n), sum_(n, 0.0f) {
    if (g_.round_steps < 1)
      g_.round_steps = 1;
  }

  void before_compute(actors::worker_context& ctx,
                      std::function<void()> ready) override {
    auto s = ctx.steps();
    auto k = s / g_.round_steps;
    if (s % g_.round_steps != 0 || st_.prepared == k + 1) {
      ready();
      return;
    }
    if (k != st_.k || st_.phase == 3) {
      st_.k = k;
      st_.phase = 0;
    }
    wait(ctx, std::move(ready));
  }

  void after_compute(actors::worker_context& ctx, std::uint32_t,
                     std::function<void()> done) override {
    auto& rep = ctx.replica();
    auto s = ctx.steps();
    // The neighbours' sum and the net dual hold for the iteration's steps:
    // taken at its first (or the first after a restore).
    if (!edges_ready_ || s % g_.round_steps == 0) {
      std::fill(sum_.begin(), sum_.end(), 0.0f);
      net_dual();
      degree_ = 0;
      if (st_.edge_l) {
        add(sum_, st_.nb_l);
        ++degree_;
      }
      if (st_.edge_r) {
        add(sum_, st_.nb_r);
        ++degree_;
      }
      edges_ready_ = true;
    }
    optim::gadmm_gradient(rep.grads(), rep.params(), st_.mu.data(), sum_.data(),
                          degree_, g_.rho, n_);
    auto rate = lr(ctx);
    opt_->step(rep.params(), rep.grads(), n_, rate);
    actors::note_lr(ctx, rate);
    if ((s + 1) % g_.round_steps == 0 || s + 1 >= last_step_)
      end_iteration(ctx, view(st_.k, ctx.id()));
    done();
  }

  caf::message_handler handlers(actors::worker_context& ctx) override {
    return marker_handler(ctx).or_else(caf::message_handler{
        [this, &ctx](group_msg& m) {
          auto scope
              = on_message(ctx.probe(), ctx.self(), model_kind, wire_size(m));
          if (!ctx.finished())
            on_model(ctx, m);
        },
        [this, &ctx](dual_msg& m) {
          auto scope
              = on_message(ctx.probe(), ctx.self(), dual_kind, wire_size(m));
          if (!ctx.finished())
            on_dual(ctx, m);
        },
    });
  }

  void save(optim::state_writer& w, const std::string& prefix) const override {
    save_base(w, prefix);
    st_.save(w, prefix);
  }

  void load(const optim::state_reader& r, const std::string& prefix) override {
    load_base(r, prefix);
    st_.load(r, prefix);
    edges_ready_ = false;
  }

  void add_stats(worker_stats& out) const override {
    peer_policy::add_stats(out);
    out.mix_discarded += st_.missed + st_.late;
  }

protected:
  void recheck(actors::worker_context& ctx) override {
    if (waiting_ && advance(ctx, false))
      resume(ctx);
  }

  std::string missing(actors::worker_context& ctx) const override {
    auto cur = view(st_.k, ctx.id());
    if (st_.phase == 0)
      return "no model of iteration " + std::to_string(st_.k)
             + " from a tail neighbour of the previous chain";
    if (st_.phase == 1)
      return "no dual of the new chain from rank "
             + std::to_string(cur.left.value_or(0));
    return "no model of iteration "
           + std::to_string(cur.head() ? st_.k : st_.k + 1)
           + " from neighbour(s)"
           + (cur.left ? " " + std::to_string(*cur.left) : std::string{})
           + (cur.right ? " " + std::to_string(*cur.right) : std::string{});
  }

  void give_up(actors::worker_context& ctx) override {
    advance(ctx, true);
  }

private:
  /// Rank r's model of round `round`, if it arrived whole.
  const tensor* model(std::uint64_t round, std::optional<std::uint32_t> r) {
    if (!r)
      return nullptr;
    auto it = st_.inbox.find(round);
    if (it == st_.inbox.end())
      return nullptr;
    auto jt = it->second.find(static_cast<worker_id>(*r));
    return jt == it->second.end() ? nullptr : &jt->second;
  }

  /// Whether the awaited model of r is here (or r is gone, or absent). A
  /// neighbour that finished sent its last model before it left: what
  /// arrived is used even once it is gone.
  bool arrived(std::uint64_t round, std::optional<std::uint32_t> r) {
    return !active(r) || model(round, r) != nullptr;
  }

  bool active(std::optional<std::uint32_t> r) const {
    return r && live(*r);
  }

  /// The iteration's start, as far as what arrived allows (all of it when
  /// `force`: the deadline passed); true once the step may compute.
  bool advance(actors::worker_context& ctx, bool force) {
    auto me = ctx.id();
    auto cur = view(st_.k, me);
    auto* x = ctx.replica().params();
    if (st_.phase == 0) { // a head of iteration k-1: that iteration's duals
      if (st_.k > 0) {
        auto prev = view(st_.k - 1, me);
        if (prev.head()) {
          if (!force
              && !(arrived(st_.k, prev.left) && arrived(st_.k, prev.right)))
            return false;
          auto* l = usable(model(st_.k, prev.left));
          auto* r = usable(model(st_.k, prev.right));
          if (l)
            optim::gadmm_dual(st_.lam_l.data(), l, x, g_.rho, n_);
          if (r)
            optim::gadmm_dual(st_.lam_r.data(), x, r, g_.rho, n_);
        }
      }
      st_.phase = 1;
    }
    if (st_.phase == 1) { // a new chain: its edges' duals, down the chain
      if (st_.k > 0 && g_.rechain > 0 && st_.k % g_.rechain == 0) {
        if (!st_.mu_ready) {
          net_dual(); // of the previous iteration's edges
          st_.mu_ready = true;
        }
        auto it = st_.duals_in.find(st_.k);
        if (!force && active(cur.left) && it == st_.duals_in.end())
          return false;
        if (cur.left && it != st_.duals_in.end())
          std::copy(it->second.data(), it->second.data() + n_,
                    st_.lam_l.data());
        else
          std::fill(st_.lam_l.begin(), st_.lam_l.end(), 0.0f);
        std::fill(st_.lam_r.begin(), st_.lam_r.end(), 0.0f);
        if (cur.right) {
          for (std::size_t i = 0; i < n_; ++i)
            st_.lam_r[i] = st_.lam_l[i] - st_.mu[i];
          if (live(*cur.right)) {
            dual_msg m{me, st_.k, tensor{st_.lam_r.data(), n_}};
            ctx.count_sent(dual_kind, wire_size(m));
            ctx.self()->send(handle(*cur.right), std::move(m));
          }
        }
        st_.mu_ready = false;
      }
      st_.phase = 2;
    }
    // The neighbours' models this iteration starts from: a head's of
    // iteration k (at k = 0 everyone's start), a tail's of k + 1.
    auto round = cur.head() ? st_.k : st_.k + 1;
    if (!force && st_.k + round > 0
        && !(arrived(round, cur.left) && arrived(round, cur.right)))
      return false;
    st_.had_l = take(round, cur.left, st_.nb_l, x);
    st_.had_r = take(round, cur.right, st_.nb_r, x);
    // An edge counts with the model taken, or the last one heard from a
    // neighbour still there (the deadline passed); a gone one's edge is
    // dropped.
    st_.edge_l = st_.had_l || active(cur.left);
    st_.edge_r = st_.had_r || active(cur.right);
    st_.phase = 3;
    st_.prepared = st_.k + 1;
    st_.inbox.erase(st_.inbox.begin(), st_.inbox.upper_bound(st_.k));
    st_.duals_in.erase(st_.duals_in.begin(), st_.duals_in.upper_bound(st_.k));
    return true;
  }

  /// Copies r's model of `round` into `into`; at round 0 the worker's own
  /// (everyone starts at the job's init). False if it did not arrive (the
  /// last one heard is kept).
  bool take(std::uint64_t round, std::optional<std::uint32_t> r,
            std::vector<float>& into, const float* own) {
    if (!r)
      return false;
    if (round == 0) {
      std::copy(own, own + n_, into.begin());
      return true;
    }
    if (auto* v = usable(model(round, r))) {
      std::copy(v, v + n_, into.begin());
      return true;
    }
    ++st_.missed;
    return false;
  }

  /// mu = lambda_left - lambda_right over the edges of the iteration: a
  /// dropped edge (its neighbour gone) adds neither its penalty nor its
  /// dual, whose last value would otherwise push the worker forever.
  void net_dual() {
    for (std::size_t i = 0; i < n_; ++i)
      st_.mu[i] = (st_.edge_l ? st_.lam_l[i] : 0.0f)
                  - (st_.edge_r ? st_.lam_r[i] : 0.0f);
  }

  const float* usable(const tensor* t) const {
    return t && t->size() == n_ ? t->data() : nullptr;
  }

  /// The end of iteration st_.k: a tail's duals, the new model to the
  /// neighbours of this chain and of the next.
  void end_iteration(actors::worker_context& ctx, const gadmm_chain_view& cur) {
    auto me = ctx.id();
    const float* x = ctx.replica().params();
    if (!cur.head()) {
      if (st_.had_l)
        optim::gadmm_dual(st_.lam_l.data(), st_.nb_l.data(), x, g_.rho, n_);
      if (st_.had_r)
        optim::gadmm_dual(st_.lam_r.data(), x, st_.nb_r.data(), g_.rho, n_);
    }
    auto to = chains_.neighbours(st_.k, me);
    auto next = chains_.neighbours(st_.k + 1, me);
    to.insert(to.end(), next.begin(), next.end());
    std::sort(to.begin(), to.end());
    to.erase(std::unique(to.begin(), to.end()), to.end());
    group_msg m{me, st_.k + 1, tensor{x, n_}};
    auto bytes = wire_size(m);
    for (auto r : to)
      if (live(r)) {
        ctx.count_sent(model_kind, bytes);
        ctx.self()->send(handle(r), m);
      }
  }

  void on_model(actors::worker_context& ctx, group_msg& m) {
    if (!check_sender(ctx, "chain neighbour's model", m.sender))
      return;
    bool usable
        = acceptable(ctx, "chain neighbour's model", m.sender, m.values, n_);
    if (m.round < st_.prepared) {
      ++st_.late; // the iteration that needed it went on without
      return;
    }
    // Sent at the end of iteration round - 1 to the neighbours of that
    // chain and the next; not far ahead.
    auto r = static_cast<std::uint32_t>(m.sender);
    auto me = static_cast<std::uint32_t>(ctx.id());
    bool expected = m.round >= 1 && m.round <= st_.k + max_ahead;
    if (expected) {
      auto a = chains_.neighbours(m.round - 1, me);
      auto b = chains_.neighbours(m.round, me);
      expected = std::count(a.begin(), a.end(), r)
                     + std::count(b.begin(), b.end(), r)
                 > 0;
    }
    if (!expected) {
      ++discarded_;
      refused(ctx,
              "worker {}: ignoring a model from {} for iteration {} (not a "
              "chain neighbour then, or more than {} iterations ahead)",
              ctx.id(), m.sender, m.round, max_ahead);
      return;
    }
    st_.inbox[m.round][m.sender] = usable ? std::move(m.values) : tensor{};
    recheck(ctx);
  }

  void on_dual(actors::worker_context& ctx, dual_msg& m) {
    if (!check_sender(ctx, "chain dual", m.sender))
      return;
    auto cur = view(m.round, ctx.id());
    const char* why = nullptr;
    if (g_.rechain == 0 || m.round == 0 || m.round % g_.rechain != 0)
      why = "no chain change at that iteration";
    else if (m.round < st_.k || (m.round == st_.k && st_.phase >= 2)
             || m.round > st_.k + max_ahead)
      why = "not awaited";
    else if (cur.left != std::optional<std::uint32_t>{m.sender})
      why = "not this worker's left neighbour on that chain";
    if (!why && !acceptable(ctx, "chain dual", m.sender, m.values, n_))
      why = "garbled";
    if (why) {
      ++discarded_;
      refused(ctx, "worker {}: ignoring a dual from {} for iteration {}: {}",
              ctx.id(), m.sender, m.round, why);
      return;
    }
    st_.duals_in[m.round] = std::move(m.values);
    recheck(ctx);
  }

  /// With changing chains (any_peer): the neighbours of this worker's
  /// chains of the iterations from its last on.
  std::vector<worker_id> told_of_finish(actors::worker_context& ctx) override {
    return rounds_ahead(ctx, st_.k, [&](std::uint64_t k) {
      return chains_.neighbours(k, ctx.id());
    });
  }

  gadmm_chain_view view(std::uint64_t k, worker_id me) const {
    return chains_.view(k, me);
  }

  static void add(std::vector<float>& acc, const std::vector<float>& v) {
    for (std::size_t i = 0; i < acc.size(); ++i)
      acc[i] += v[i];
  }

  /// Iterations a model or dual may be ahead of this worker's.
  static constexpr std::uint64_t max_ahead = 64;

  gadmm_settings g_;
  std::size_t n_ = 0;
  std::uint64_t last_step_ = 0;
  gadmm_chains chains_;
  gadmm_state st_;
  /// The iteration's sum of the neighbours' models and their count (with
  /// st_.mu: derived from st_ at the iteration's first step).
  std::vector<float> sum_;
  std::size_t degree_ = 0;
  bool edges_ready_ = false;
};

} // namespace

std::unique_ptr<actors::comm_policy>
make_gadmm_policy(actors::peer_policy_options opts, gadmm_settings g,
                  std::size_t parameters, std::uint64_t steps) {
  return std::make_unique<gadmm_policy>(std::move(opts), g, parameters, steps);
}

} // namespace troupe::algos
