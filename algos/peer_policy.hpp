#pragma once

// The base of the peer-to-peer policies (SGP, DS-Sync, all-reduce SGD): the
// peers and who is gone, the optimizer, and one pending continuation with
// its deadline. Shared by algos/sgp/gossip_policy.cpp,
// algos/dssync/dssync_policy.cpp and algos/allreduce/allreduce_policy.cpp
// only; their settings (actors::peer_policy_options) travel in the job.

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/clock.hpp"
#include "actors/comm_policy.hpp"
#include "actors/detail/log.hpp"
#include "messages/compressed.hpp"
#include "messages/gossip.hpp"
#include "optim/robust_mix.hpp"

namespace troupe::algos::detail {

using namespace messages;

/// A peer-to-peer worker's view of its peers: what SGP and DS-Sync workers
/// send each other (handled by their policies, and leave by the core).
using peer_worker_actor = caf::typed_actor<
    // SGP: a push-sum share, plain or compressed.
    caf::reacts_to<gossip_msg>, caf::reacts_to<compressed_gossip_msg>,
    // DS-Sync: a group member's parameters.
    caf::reacts_to<group_msg>,
    // The sender finished its steps (core).
    caf::reacts_to<leave_atom, worker_id>,
    // A checkpoint's marker: the sender paused, everything it sent before
    // has arrived (peer_policy::quiesce).
    caf::reacts_to<flush_atom, worker_id>>;

/// What SGP and DS-Sync share: the peers and who is gone, the optimizer,
/// and one pending continuation with its deadline.
class peer_policy : public actors::comm_policy {
public:
  peer_policy(actors::peer_policy_options o, std::size_t n)
      : opts_(std::move(o)),
        opt_(optim::make_optimizer<float>(opts_.optimizer, n)) {
    if (opts_.schedule)
      schedule_.emplace(*opts_.schedule);
  }

  void on_peers(actors::worker_context& ctx,
                const std::vector<caf::actor>& peers) override {
    peers_ = peers;
    gone_.assign(peers.size(), false);
    for (std::size_t r = 0; r < peers.size(); ++r)
      gone_[r] = !peers[r] || r == ctx.id();
    // Restored from a checkpoint: what was heard is the checkpoint's.
    if (heard_.size() != peers.size())
      heard_.assign(peers.size(), 0);
    markers_.assign(peers.size(), 0);
  }

  void on_peer_gone(actors::worker_context& ctx, worker_id r) override {
    if (r >= gone_.size() || gone_[r])
      return;
    gone_[r] = true;
    actors::detail::log().debug("worker {}: peer {} left or died", ctx.id(), r);
    recheck(ctx);
    check_markers();
  }

  /// A checkpoint's pause (a Chandy-Lamport cut): a marker to every live
  /// peer, after every message sent to it; then, once a marker came from
  /// every live peer (each sent after its messages, and nothing more before
  /// the resume: the sender is paused), what the peers sent is here.
  /// Every worker pauses at a step boundary or while its step waits for
  /// its peers (before_compute), so every marker comes.
  void quiesce(actors::worker_context& ctx,
               std::function<void()> done) override {
    for (std::size_t r = 0; r < peers_.size(); ++r)
      if (live(r)) {
        ctx.self()->send(caf::actor_cast<peer_worker_actor>(peers_[r]),
                         flush_atom::value, ctx.id());
        ctx.count_sent(actors::msg_type::other, actors::small_message_bytes);
      }
    quiescing_ = std::move(done);
    check_markers();
  }

  void on_finish(actors::worker_context& ctx) override {
    waiting_ = nullptr;
    for (std::size_t r = 0; r < peers_.size(); ++r)
      if (live(r)) {
        ctx.self()->send(caf::actor_cast<peer_worker_actor>(peers_[r]),
                         leave_atom::value, ctx.id());
        ctx.count_sent(actors::msg_type::leave, actors::small_message_bytes);
      }
  }

  void on_timeout(actors::worker_context& ctx, std::uint64_t seq) override {
    if (!waiting_ || seq != wait_seq_)
      return;
    actors::detail::log().warn(
        "worker {}: {} within the request timeout; going on "
        "without",
        ctx.id(), missing(ctx));
    ctx.count_timeout();
    give_up(ctx);
    resume(ctx);
  }

protected:
  /// The marker's handler (quiesce), to compose into handlers().
  caf::message_handler marker_handler(actors::worker_context& ctx) {
    return {[this, &ctx](flush_atom, worker_id from) {
      auto scope
          = actors::on_message(ctx.probe(), ctx.self(), actors::msg_type::other,
                               actors::small_message_bytes);
      if (from < markers_.size() && check_sender(ctx, "pause marker", from))
        ++markers_[from];
      check_markers();
    }};
  }

  /// Robust mixing's counts (worker_stats' mix_clipped, mix_discarded).
  void add_stats(worker_stats& out) const override {
    out.mix_clipped = clipped_;
    out.mix_discarded = discarded_;
  }

  /// The base's state in a checkpoint: the optimizer, what was heard and
  /// robust mixing's counts.
  void save_base(optim::state_writer& w, const std::string& prefix) const {
    opt_->save(w, prefix + "opt.");
    w.put(prefix + "heard", heard_);
    std::uint64_t mixed[] = {clipped_, discarded_};
    w.put(prefix + "robust_mix", mixed, 2);
  }

  void load_base(const optim::state_reader& r, const std::string& prefix) {
    opt_->load(r, prefix + "opt.");
    auto heard = r.u64(prefix + "heard");
    if (heard.size() != opts_.workers)
      throw r.error(prefix + "heard", "not one entry per worker");
    heard_ = std::move(heard);
    clipped_ = discarded_ = 0;
    if (r.has(prefix + "robust_mix")) { // written since wire version 17
      auto mixed = r.u64(prefix + "robust_mix", 2);
      clipped_ = mixed[0];
      discarded_ = mixed[1];
    }
  }

  /// Rank r is a peer we may send to and wait for.
  bool live(std::size_t r) const noexcept {
    return r < peers_.size() && !gone_[r];
  }

  double lr(actors::worker_context& ctx) const {
    return schedule_ ? schedule_->lr(ctx.steps()) : opts_.lr;
  }

  /// Waits (with a deadline) until recheck() finds the condition met.
  void wait(actors::worker_context& ctx, std::function<void()> k) {
    waiting_ = std::move(k);
    wait_start_ = actors::now(ctx.self());
    ++wait_seq_;
    recheck(ctx);
    if (!waiting_)
      return;
    ctx.schedule_timeout(wait_seq_);
    if (auto* p = ctx.probe())
      p->activity("waiting for peers");
  }

  /// Runs the pending continuation (the wait is counted).
  void resume(actors::worker_context& ctx) {
    if (!waiting_)
      return;
    auto k = std::move(waiting_);
    waiting_ = nullptr;
    ctx.count_wait(actors::nanoseconds_since(ctx.self(), wait_start_));
    k();
  }

  /// The message being handled was sent by rank `sender`'s own actor: a
  /// peer cannot speak for another (it would escape the per-sender checks
  /// of robust mixing). Without the peers' handles (before on_peers) any
  /// rank below the worker count is taken as it says.
  bool sent_by(actors::worker_context& ctx, worker_id sender) const {
    if (sender >= opts_.workers)
      return false;
    if (peers_.empty())
      return true;
    return sender < peers_.size() && peers_[sender]
           && caf::actor_cast<caf::actor_addr>(ctx.self()->current_sender())
                  == peers_[sender].address();
  }

  /// ClippedGossip's step on x[0..n) with the radius of --agg-clip-radius
  /// (optim::clipped_mix), counted; false if a neighbour was not finite.
  bool clip_mix(float* x, std::size_t n,
                const std::vector<optim::neighbour_model>& neighbours) {
    auto out
        = optim::clipped_mix(x, n, neighbours, opts_.mix_options.clip_radius);
    clipped_ += out.clipped;
    discarded_ += out.skipped;
    return out.skipped == 0;
  }

  /// A message refused: counted as an error in the probe, and logged with
  /// the format `text` the first max_logged times (a hostile peer cannot
  /// flood the log).
  template <class... Ts>
  void refused(actors::worker_context& ctx, const char* text,
               const Ts&... xs) const {
    if (auto* p = ctx.probe())
      p->error();
    if (++refused_ <= max_logged)
      actors::detail::log().warn(fmt::runtime(text), xs...);
    if (refused_ == max_logged)
      actors::detail::log().warn(
          "worker {}: not logging further refused messages (counted in "
          "mix_discarded and the monitor's errors)",
          ctx.id());
  }

  /// sent_by(), with a warning naming the message (`what`) if not.
  bool check_sender(actors::worker_context& ctx, const char* what,
                    worker_id sender) const {
    if (sent_by(ctx, sender))
      return true;
    refused(ctx,
            "worker {}: ignoring a {} that names rank {} but was not sent by "
            "its actor",
            ctx.id(), what, sender);
    return false;
  }

  /// Valid payload of n values from rank `sender` (sent by its actor), all
  /// finite.
  bool acceptable(actors::worker_context& ctx, const char* what,
                  worker_id sender, const tensor& values, std::size_t n) const {
    const char* why = nullptr;
    if (!sent_by(ctx, sender))
      why = "not sent by that rank's actor";
    else if (values.size() != n)
      why = "not one value per parameter";
    for (std::size_t i = 0; !why && i < n; ++i)
      if (!std::isfinite(values.data()[i]))
        why = "a NaN or infinite value";
    // The first few are logged; a peer that keeps sending them (a NaN
    // attacker) is counted, not logged every round.
    if (why)
      refused(ctx,
              "worker {}: ignoring a {} from {}: {} ({} values, expected {})",
              ctx.id(), what, sender, why, values.size(), n);
    bool ok = why == nullptr;
    return ok;
  }

  /// The pause is answered once every live peer's marker is here.
  void check_markers() {
    if (!quiescing_)
      return;
    for (std::size_t r = 0; r < peers_.size(); ++r)
      if (live(r) && (r >= markers_.size() || markers_[r] == 0))
        return;
    for (std::size_t r = 0; r < markers_.size(); ++r)
      if (live(r))
        --markers_[r];
    auto done = std::move(quiescing_);
    quiescing_ = nullptr;
    done();
  }

  /// Resumes if the awaited messages are here.
  virtual void recheck(actors::worker_context& ctx) = 0;
  /// The awaited messages, in words (for the timeout warning).
  virtual std::string missing(actors::worker_context& ctx) const = 0;
  /// The deadline passed: consider the wait satisfied.
  virtual void give_up(actors::worker_context& ctx) = 0;

  actors::peer_policy_options opts_;
  std::unique_ptr<optim::optimizer<float>> opt_;
  std::optional<optim::schedule> schedule_;
  std::vector<caf::actor> peers_;
  std::vector<bool> gone_;
  /// Per rank: 1 + the last iteration / round heard from it (0: none).
  std::vector<std::uint64_t> heard_;
  std::function<void()> waiting_;
  std::uint64_t wait_seq_ = 0;
  /// Checkpoint markers received per rank (not yet matched by a pause of
  /// this worker's), and the pause waiting for them.
  std::vector<std::uint64_t> markers_;
  /// Robust mixing: neighbours' models clipped, and left out.
  std::uint64_t clipped_ = 0, discarded_ = 0;
  /// Payloads refused (the first max_logged are logged).
  mutable std::uint64_t refused_ = 0;
  static constexpr std::uint64_t max_logged = 5;
  std::function<void()> quiescing_;
  actors::time_point wait_start_;
};

} // namespace troupe::algos::detail
