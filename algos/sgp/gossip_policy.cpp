// SGP / overlap SGP: push-sum gossip on the time-varying exponential graph
// (the base shared with DS-Sync is in algos/peer_policy.hpp). No server:
// the peers' handles arrive before the start, and a peer that finishes
// (leave) or dies (down) is no longer a target nor awaited. Every wait ends
// at the request timeout.

#include "algos/sgp/gossip_policy.hpp"

#include <chrono>
#include <cmath>
#include <map>
#include <string>

#include <caf/typed_event_based_actor.hpp>

#include "actors/comm_policy.hpp"
#include "actors/detail/log.hpp"
#include "algos/peer_policy.hpp"
#include "algos/sgp/clipped_gossip.hpp"
#include "algos/sgp/sgp_state.hpp"
#include "optim/compress.hpp"
#include "optim/gossip.hpp"

namespace troupe::algos {

namespace {

/// Its messages' kinds in the probes (actors/probe.hpp).
const actors::msg_type gossip_kind = actors::message_kind("gossip");

} // namespace

using namespace messages;

namespace {

using detail::peer_policy;

class sgp_policy : public peer_policy {
public:
  sgp_policy(actors::peer_policy_options o, std::size_t n)
      : peer_policy(std::move(o), n), n_(n) {}

  void before_compute(actors::worker_context& ctx,
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

  void after_compute(actors::worker_context& ctx, std::uint32_t,
                     std::function<void()> done) override {
    auto& rep = ctx.replica();
    auto n = x_.size();
    // The gradient was taken at z; the step moves the numerator x.
    auto rate = lr(ctx);
    opt_->step(x_.data(), rep.grads(), n, rate);
    actors::note_lr(ctx, rate);
    auto k = ctx.steps();
    std::vector<std::uint32_t> targets;
    for (auto j :
         optim::exponential_out_peers(ctx.id(), k, opts_.workers, opts_.peers))
      if (live(j))
        targets.push_back(j);
    // Keep 1 / (d + 1) of x and w; each out-peer gets the same share. A
    // gone peer's share stays here, so no mass is lost.
    auto p = 1.0 / static_cast<double>(targets.size() + 1);
    if (opts_.compress.method != optim::codec::none && !targets.empty()) {
      // A consensus step below 1: the copies lag the models they stand
      // for, and moving all of p * copy each step made the sparse codecs
      // diverge on mlp (AdaComp and top-k at gamma 1; stable at 0.5 and
      // 0.2).
      send_compressed(ctx, k, targets, p * opts_.gamma);
      debias(ctx);
      done();
      return;
    }
    // cclip sends the whole model with weight p; push-sum splits x and w.
    bool clipped = opts_.mix_rule == "cclip";
    if (!clipped) {
      auto pf = static_cast<float>(p);
      for (auto& v : x_)
        v *= pf;
      w_ *= p;
    }
    if (!targets.empty()) {
      gossip_msg m{ctx.id(), k, clipped ? p : w_, tensor{x_.data(), n}};
      auto bytes = wire_size(m);
      for (auto j : targets) {
        ctx.count_sent(gossip_kind, bytes);
        ctx.self()->send(handle(j), m);
      }
    }
    debias(ctx);
    done();
  }

  caf::message_handler handlers(actors::worker_context& ctx) override {
    return marker_handler(ctx).or_else(caf::message_handler{
        [this, &ctx](gossip_msg& m) {
          auto scope
              = on_message(ctx.probe(), ctx.self(), gossip_kind, wire_size(m));
          on_gossip(ctx, m);
        },
        [this, &ctx](compressed_gossip_msg& m) {
          auto scope
              = on_message(ctx.probe(), ctx.self(), gossip_kind, wire_size(m));
          on_gossip(ctx, m);
        },
    });
  }

  /// A peer's push-sum share: added to x and w.
  void on_gossip(actors::worker_context& ctx, gossip_msg& m) {
    init(ctx);
    if (!check_sender(ctx, "push-sum share", m.sender))
      return;
    bool usable
        = acceptable(ctx, "push-sum share", m.sender, m.values, x_.size());
    if (usable && !(m.weight > 0 && std::isfinite(m.weight))) {
      refused(ctx, "worker {}: ignoring a share from {} with weight {}",
              ctx.id(), m.sender, m.weight);
      usable = false;
    }
    if (!usable) {
      ++discarded_;
    } else if (opts_.mix_rule == "cclip") {
      usable = clipped_share(ctx, m);
    } else {
      const float* v = m.values.data();
      for (std::size_t i = 0; i < x_.size(); ++i)
        x_[i] += v[i];
      w_ += m.weight;
    }
    // Heard even if refused: a step does not wait out the request timeout
    // for a garbled share.
    if (auto* e = peer(m.sender))
      e->heard = std::max(e->heard, m.iteration + 1);
    if (usable) {
      ctx.count_mix();
      if (!waiting_)
        debias(ctx); // the replica shows z between steps (fetches read it)
    }
    recheck(ctx);
  }

  /// A compressed share: the receiver adds the decoded change to its copy
  /// of this sender's share and mixes the whole copy.
  void on_gossip(actors::worker_context& ctx, compressed_gossip_msg& m) {
    init(ctx);
    auto n = x_.size();
    if (!sent_by(ctx, m.sender) || m.size != n || !(m.weight > 0)
        || !std::isfinite(m.weight)) {
      actors::detail::log().warn(
          "worker {}: ignoring a compressed share from {} of "
          "{} values and weight {}",
          ctx.id(), m.sender, m.size, m.weight);
      return;
    }
    decoded_.resize(n);
    try {
      optim::decompress(m.packed, decoded_.data(), n);
    } catch (const std::invalid_argument& e) {
      actors::detail::log().warn("worker {}: cannot decode a share from {}: {}",
                                 ctx.id(), m.sender, e.what());
      if (auto* probe = ctx.probe())
        probe->error();
      return;
    }
    if (!(m.fraction > 0 && m.fraction <= 1)) {
      actors::detail::log().warn(
          "worker {}: ignoring a share from {} with fraction "
          "{}",
          ctx.id(), m.sender, m.fraction);
      return;
    }
    auto& copy = copy_of(copy_in_, m.sender, n, opts_.init);
    auto f = static_cast<float>(m.fraction);
    for (std::size_t i = 0; i < n; ++i) {
      copy[i] += decoded_[i];
      x_[i] += f * copy[i];
    }
    w_ += m.weight;
    auto* e = peer(m.sender); // a neighbour: sent_by() above
    e->heard = std::max(e->heard, m.iteration + 1);
    ctx.count_mix();
    if (!waiting_)
      debias(ctx);
    recheck(ctx);
  }

  double weight() const noexcept override {
    return w_;
  }

  /// Clipped gossip (algos/sgp/clipped_gossip.hpp).
  bool clipped_share(actors::worker_context& ctx, const gossip_msg& m) {
    if (auto why
        = clipped_gossip_refusal(opts_, rank_, m, heard_of(m.sender))) {
      ++discarded_;
      refused(ctx, "worker {}: ignoring a share from {} of iteration {}: {}",
              ctx.id(), m.sender, m.iteration, why);
      return false;
    }
    return clip_mix(x_.data(), x_.size(),
                    {{m.sender, m.values.data(), m.weight}});
  }

  void add_stats(worker_stats& out) const override {
    peer_policy::add_stats(out);
    for (auto& [j, c] : compressors_)
      actors::add_compression(out, c);
    // The error feedback is the gap between the last shares and the
    // receivers' copies of them.
    out.residual_norm = real{residual_norm_};
  }

  // -- checkpoints: no share in flight (the markers, peer_policy::quiesce)

  /// The numerator x and weight w (their push-sum mass), what was heard,
  /// the optimizer, and compressed SGP's copies and residuals.
  void save(optim::state_writer& w, const std::string& prefix) const override {
    save_base(w, prefix);
    w.put(prefix + "x", x_);
    w.put_f64(prefix + "w", w_);
    w.put_u64(prefix + "checked", checked_);
    w.put_u64(prefix + "rank", rank_);
    w.put_f64(prefix + "residual_norm", residual_norm_);
    std::vector<std::uint64_t> keys;
    for (const auto& [j, c] : compressors_) {
      keys.push_back(j);
      c.save(w, prefix + "compress." + std::to_string(j) + ".");
    }
    w.put(prefix + "compress.peers", keys);
    save_copies(w, prefix + "copy_out.", copy_out_);
    save_copies(w, prefix + "copy_in.", copy_in_);
  }

  void load(const optim::state_reader& r, const std::string& prefix) override {
    load_base(r, prefix);
    auto x = r.f32(prefix + "x");
    if (!x.empty() && x.size() != n_)
      throw r.error(prefix + "x", "not the model's size");
    x_ = std::move(x);
    w_ = r.f64_scalar(prefix + "w");
    rank_ = static_cast<worker_id>(r.u64_scalar(prefix + "rank"));
    checked_ = r.u64_scalar(prefix + "checked");
    residual_norm_ = r.f64_scalar(prefix + "residual_norm");
    compressors_.clear();
    for (auto j : r.u64(prefix + "compress.peers")) {
      auto it = compressors_
                    .emplace(static_cast<std::uint32_t>(j),
                             optim::compressor{
                                 opts_.compress,
                                 optim::segments_of(opts_.layers, 0, n_)})
                    .first;
      it->second.load(r, prefix + "compress." + std::to_string(j) + ".");
    }
    load_copies(r, prefix + "copy_out.", copy_out_, n_);
    load_copies(r, prefix + "copy_in.", copy_in_, n_);
  }

protected:
  void recheck(actors::worker_context& ctx) override {
    if (waiting_ && satisfied(wait_step_))
      resume(ctx);
  }

  std::string missing(actors::worker_context& ctx) const override {
    std::string out = "no push-sum share of iteration "
                      + std::to_string(checked_) + " from in-peer(s)";
    for (auto j : optim::exponential_in_peers(ctx.id(), checked_, opts_.workers,
                                              opts_.peers))
      if (live(j) && heard_of(j) <= checked_)
        out += " " + std::to_string(j);
    return out;
  }

  void give_up(actors::worker_context&) override {
    checked_ = wait_step_ > opts_.overlap ? wait_step_ - opts_.overlap : 0;
  }

private:
  void init(actors::worker_context& ctx) {
    if (!x_.empty())
      return;
    auto& rep = ctx.replica();
    x_.assign(rep.params(), rep.params() + rep.size());
    w_ = 1;
    rank_ = ctx.id();
  }

  /// Before step k every in-peer's share of iterations t <= k - 1 - overlap
  /// has arrived (or the in-peer is gone).
  bool satisfied(std::uint64_t k) {
    if (!have_peers_)
      return true;
    while (checked_ + opts_.overlap < k) {
      for (auto j : optim::exponential_in_peers(rank_, checked_, opts_.workers,
                                                opts_.peers))
        if (live(j) && heard_of(j) <= checked_)
          return false;
      ++checked_;
    }
    return true;
  }

  /// The replica's parameters <- z = x / w.
  void debias(actors::worker_context& ctx) {
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

  /// Compressed shares (quantized push-sum with a public copy per pair):
  /// the sender keeps, for each out-peer, the copy of its model x that the
  /// peer holds, sends the compressed change x - copy (what it leaves out
  /// stays in the next change: error feedback), and moves p * copy to the
  /// peer: it subtracts exactly what the peer adds, so no mass is lost; the
  /// weight part p * w is sent exactly.
  void send_compressed(actors::worker_context& ctx, std::uint64_t k,
                       const std::vector<std::uint32_t>& targets, double p) {
    auto n = x_.size();
    auto pf = static_cast<float>(p);
    kept_ = x_; // a member: no allocation per step
    double gap = 0;
    for (auto j : targets) {
      auto& copy = copy_of(copy_out_, j, n, opts_.init);
      auto it = compressors_.find(j);
      if (it == compressors_.end())
        it = compressors_
                 .emplace(j, optim::compressor{opts_.compress,
                                               optim::segments_of(opts_.layers,
                                                                  0, n)})
                 .first;
      diff_.resize(n);
      for (std::size_t i = 0; i < n; ++i)
        diff_[i] = x_[i] - copy[i];
      compressed_gossip_msg m{ctx.id(), k, w_ * p, p, n, {}};
      try {
        m.packed = it->second.compress(diff_.data(), n);
      } catch (const std::invalid_argument& e) {
        ctx.fail(std::string{"cannot compress a share: "} + e.what());
        return;
      }
      it->second.reset_residual();
      decoded_.resize(n);
      optim::decompress(m.packed, decoded_.data(), n);
      for (std::size_t i = 0; i < n; ++i) {
        copy[i] += decoded_[i]; // exactly what the receiver will hold
        kept_[i] -= pf * copy[i];
        double d = x_[i] - copy[i];
        gap += d * d;
      }
      ctx.count_sent(gossip_kind, wire_size(m));
      ctx.self()->send(handle(j), std::move(m));
    }
    x_.swap(kept_);
    w_ -= static_cast<double>(targets.size()) * p * w_;
    residual_norm_ = std::sqrt(gap);
  }

  std::vector<float> x_;
  double w_ = 1;
  std::map<std::uint32_t, optim::compressor> compressors_;
  std::map<std::uint32_t, std::vector<float>> copy_out_, copy_in_;
  std::vector<float> diff_, decoded_, kept_;
  double residual_norm_ = 0;
  std::uint64_t checked_ = 0, wait_step_ = 0;
  worker_id rank_ = 0;
  std::size_t n_ = 0; ///< the model's size
};
} // namespace

std::unique_ptr<actors::comm_policy>
make_sgp_policy(actors::peer_policy_options opts, std::size_t parameters) {
  if (opts.peers < 1)
    opts.peers = 1;
  return std::make_unique<sgp_policy>(std::move(opts), parameters);
}

} // namespace troupe::algos
