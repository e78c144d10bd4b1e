#pragma once

// The base of the peer-to-peer policies (SGP, DS-Sync, all-reduce SGD,
// GADMM): the neighbours (only the ranks the worker exchanges with) and who
// is gone, the optimizer, and one pending continuation with its deadline.
// Shared by algos/sgp/gossip_policy.cpp, algos/dssync/dssync_policy.cpp,
// algos/allreduce/allreduce_policy.cpp and algos/gadmm/gadmm_policy.cpp
// only; their settings
// (actors::peer_policy_options) travel in the job.

#include <algorithm>
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
    // DS-Sync: a group member's parameters; GADMM: a chain neighbour's.
    caf::reacts_to<group_msg>,
    // Dynamic GADMM: a new chain's edge dual.
    caf::reacts_to<dual_msg>,
    // The sender finished its steps (core).
    caf::reacts_to<leave_atom, worker_id>,
    // A checkpoint's marker: the sender paused, everything it sent before
    // has arrived (peer_policy::quiesce).
    caf::reacts_to<flush_atom, worker_id>>;

/// One neighbour's state: kept for the ranks the worker exchanges with
/// (peer_policy_options::neighbours) only, so that a worker's state does not
/// grow with the job.
struct peer_entry {
  worker_id rank = 0;
  caf::actor handle;
  bool gone = false;
  /// 1 + the last iteration / round heard from it (0: none).
  std::uint64_t heard = 0;
  /// Checkpoint markers received (not yet matched by a pause of this
  /// worker's).
  std::uint64_t markers = 0;
};

/// What SGP and DS-Sync share: the neighbours and who is gone, the
/// optimizer, and one pending continuation with its deadline.
class peer_policy : public actors::comm_policy {
public:
  peer_policy(actors::peer_policy_options o, std::size_t n)
      : opts_(std::move(o)),
        opt_(optim::make_optimizer<float>(opts_.optimizer, n)) {
    if (opts_.schedule)
      schedule_.emplace(*opts_.schedule);
    auto ranks = opts_.neighbours;
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    for (auto r : ranks)
      if (r < opts_.workers)
        peers_.push_back(peer_entry{r, {}, false, 0, 0});
    opts_.neighbours.clear(); // kept once, in peers_
  }

  /// The neighbours' handles; one without a handle is gone, a rank that is
  /// not a neighbour is ignored.
  void on_peers(actors::worker_context&, const std::vector<worker_id>& ranks,
                const std::vector<caf::actor>& handles) override {
    for (std::size_t i = 0; i < ranks.size() && i < handles.size(); ++i)
      if (auto* e = peer(ranks[i]))
        e->handle = handles[i];
    for (auto& e : peers_) {
      e.gone = !e.handle;
      e.markers = 0;
    }
    have_peers_ = true;
  }

  void on_peer_gone(actors::worker_context& ctx, worker_id r) override {
    auto* e = peer(r);
    if (!e || e->gone)
      return;
    e->gone = true;
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
    for (auto& e : peers_)
      if (live(e)) {
        ctx.self()->send(caf::actor_cast<peer_worker_actor>(e.handle),
                         flush_atom::value, ctx.id());
        ctx.count_sent(actors::msg_type::other, actors::small_message_bytes);
      }
    quiescing_ = std::move(done);
    check_markers();
  }

  void on_finish(actors::worker_context& ctx) override {
    waiting_ = nullptr;
    for (auto& e : peers_)
      if (live(e)) {
        ctx.self()->send(caf::actor_cast<peer_worker_actor>(e.handle),
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
      if (check_sender(ctx, "pause marker", from))
        ++peer(from)->markers;
      check_markers();
    }};
  }

  /// Robust mixing's counts (worker_stats' mix_clipped, mix_discarded).
  void add_stats(worker_stats& out) const override {
    out.mix_clipped = clipped_;
    out.mix_discarded = discarded_;
  }

  /// The base's state in a checkpoint: the optimizer, what was heard from
  /// each neighbour and robust mixing's counts.
  void save_base(optim::state_writer& w, const std::string& prefix) const {
    opt_->save(w, prefix + "opt.");
    std::vector<std::uint64_t> ranks, heard;
    for (auto& e : peers_) {
      ranks.push_back(e.rank);
      heard.push_back(e.heard);
    }
    w.put(prefix + "heard.ranks", ranks);
    w.put(prefix + "heard", heard);
    std::uint64_t mixed[] = {clipped_, discarded_};
    w.put(prefix + "robust_mix", mixed, 2);
  }

  void load_base(const optim::state_reader& r, const std::string& prefix) {
    opt_->load(r, prefix + "opt.");
    auto heard = r.u64(prefix + "heard");
    for (auto& e : peers_)
      e.heard = 0;
    if (r.has(prefix + "heard.ranks")) { // written since wire version 20
      auto ranks = r.u64(prefix + "heard.ranks");
      if (ranks.size() != heard.size())
        throw r.error(prefix + "heard.ranks", "not one rank per entry heard");
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        if (ranks[i] >= opts_.workers)
          throw r.error(prefix + "heard.ranks",
                        "rank " + std::to_string(ranks[i]) + " of a job of "
                            + std::to_string(opts_.workers) + " workers");
        if (auto* e = peer(static_cast<worker_id>(ranks[i])))
          e->heard = heard[i];
      }
    } else { // one entry per worker
      if (heard.size() != opts_.workers)
        throw r.error(prefix + "heard", "not one entry per worker");
      for (auto& e : peers_)
        e.heard = heard[e.rank];
    }
    clipped_ = discarded_ = 0;
    if (r.has(prefix + "robust_mix")) { // written since wire version 17
      auto mixed = r.u64(prefix + "robust_mix", 2);
      clipped_ = mixed[0];
      discarded_ = mixed[1];
    }
  }

  /// Neighbour r's state (nullptr: not a neighbour).
  peer_entry* peer(worker_id r) noexcept {
    auto it = std::lower_bound(
        peers_.begin(), peers_.end(), r,
        [](const peer_entry& e, worker_id v) { return e.rank < v; });
    return it != peers_.end() && it->rank == r ? &*it : nullptr;
  }
  const peer_entry* peer(worker_id r) const noexcept {
    return const_cast<peer_policy*>(this)->peer(r);
  }

  /// A neighbour we may send to and wait for (its handle is here).
  bool live(const peer_entry& e) const noexcept {
    return have_peers_ && !e.gone;
  }
  bool live(std::size_t r) const noexcept {
    auto* e = r < opts_.workers ? peer(static_cast<worker_id>(r)) : nullptr;
    return e && live(*e);
  }

  /// What was heard from rank r (0: nothing, or not a neighbour).
  std::uint64_t heard_of(worker_id r) const noexcept {
    auto* e = peer(r);
    return e ? e->heard : 0;
  }

  /// Rank r's handle (null: not a neighbour, or no handle yet).
  template <class Handle = peer_worker_actor>
  Handle handle(std::size_t r) const {
    auto* e = r < opts_.workers ? peer(static_cast<worker_id>(r)) : nullptr;
    return e ? caf::actor_cast<Handle>(e->handle) : Handle{};
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

  /// The message being handled was sent by rank `sender`'s own actor, a
  /// neighbour: a peer cannot speak for another (it would escape the
  /// per-sender checks of robust mixing). Without the handles (before
  /// on_peers) a neighbour's rank is taken as it says.
  bool sent_by(actors::worker_context& ctx, worker_id sender) const {
    auto* e = peer(sender);
    if (!e)
      return false;
    if (!have_peers_)
      return true;
    return e->handle
           && caf::actor_cast<caf::actor_addr>(ctx.self()->current_sender())
                  == e->handle.address();
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
    for (auto& e : peers_)
      if (live(e) && e.markers == 0)
        return;
    for (auto& e : peers_)
      if (live(e))
        --e.markers;
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
  /// The neighbours, by increasing rank.
  std::vector<peer_entry> peers_;
  /// on_peers came (the neighbours' handles are known).
  bool have_peers_ = false;
  std::function<void()> waiting_;
  std::uint64_t wait_seq_ = 0;
  /// Robust mixing: neighbours' models clipped, and left out.
  std::uint64_t clipped_ = 0, discarded_ = 0;
  /// Payloads refused (the first max_logged are logged).
  mutable std::uint64_t refused_ = 0;
  static constexpr std::uint64_t max_logged = 5;
  /// A pause waiting for the neighbours' markers.
  std::function<void()> quiescing_;
  actors::time_point wait_start_;
};

} // namespace troupe::algos::detail
