#pragma once

// The base of the peer-to-peer policies (SGP, DS-Sync, all-reduce SGD,
// GADMM): the neighbours (only the ranks the worker exchanges with) and who
// is gone, the optimizer, and one pending continuation with its deadline.
// Defined in algos/peer_policy.cpp and here; shared by
// algos/sgp/gossip_policy.cpp, algos/dssync/dssync_policy.cpp,
// algos/allreduce/allreduce_policy.cpp and algos/gadmm/gadmm_policy.cpp
// only; their settings
// (actors::peer_policy_options) travel in the job.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
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
                const std::vector<caf::actor>& handles) override;

  /// With any_peer: every worker's handle. Nothing per peer is kept but
  /// the ranks gone and the markers of a pause.
  void on_peer_table(actors::worker_context& ctx,
                     const handle_table& t) override;

  void on_peer_gone(actors::worker_context& ctx, worker_id r) override;

  /// A checkpoint's pause (a Chandy-Lamport cut): a marker to every live
  /// peer, after every message sent to it; then, once a marker came from
  /// every live peer (each sent after its messages, and nothing more before
  /// the resume: the sender is paused), what the peers sent is here.
  /// Every worker pauses at a step boundary or while its step waits for
  /// its peers (before_compute), so every marker comes.
  void quiesce(actors::worker_context& ctx,
               std::function<void()> done) override;

  void on_finish(actors::worker_context& ctx) override;

  void on_timeout(actors::worker_context& ctx, std::uint64_t seq) override;

protected:
  /// The marker's handler (quiesce), to compose into handlers().
  caf::message_handler marker_handler(actors::worker_context& ctx) {
    return {[this, &ctx](flush_atom, worker_id from) {
      auto scope
          = actors::on_message(ctx.probe(), ctx.self(), actors::msg_type::other,
                               actors::small_message_bytes);
      if (check_sender(ctx, "pause marker", from)) {
        if (table_.size() == 0)
          ++peer(from)->markers;
        else if (table_markers_[from]++ == 0 && live(from))
          ++marked_;
      }
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
  void save_base(optim::state_writer& w, const std::string& prefix) const;

  void load_base(const optim::state_reader& r, const std::string& prefix);

  /// With any_peer, the ranks told when this worker finishes (the others
  /// learn it at their deadline): none unless the algorithm says, most
  /// often its peers of the rounds ahead (rounds_ahead).
  virtual std::vector<worker_id> told_of_finish(actors::worker_context&) {
    return {};
  }

  /// Rounds after its last whose peers a finishing worker tells.
  static constexpr std::uint64_t finish_horizon = 16;

  /// The ranks `peers_of(k)` names for rounds [from, from + finish_horizon),
  /// increasing, this worker left out.
  template <class F>
  std::vector<worker_id> rounds_ahead(actors::worker_context& ctx,
                                      std::uint64_t from, F peers_of) const {
    std::vector<worker_id> out;
    for (std::uint64_t k = from; k < from + finish_horizon; ++k)
      for (auto r : peers_of(k))
        if (r != ctx.id())
          out.push_back(r);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  bool is_gone(worker_id r) const noexcept {
    return std::binary_search(gone_.begin(), gone_.end(), r);
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
    if (table_.size() > 0)
      return have_peers_ && r < table_.size() && r != me_
             && !is_gone(static_cast<worker_id>(r));
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
    if (table_.size() > 0)
      return r < table_.size() ? caf::actor_cast<Handle>(table_[r]) : Handle{};
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
    if (opts_.any_peer && !have_peers_)
      return sender < opts_.workers && sender != ctx.id();
    if (table_.size() > 0)
      return sender < table_.size() && sender != me_ && table_[sender]
             && caf::actor_cast<caf::actor_addr>(ctx.self()->current_sender())
                    == table_[sender].address();
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
                  worker_id sender, const tensor& values, std::size_t n) const;

  /// The pause is answered once every live peer's marker is here.
  void check_markers();

  /// Resumes if the awaited messages are here.
  virtual void recheck(actors::worker_context& ctx) = 0;
  /// The awaited messages, in words (for the timeout warning).
  virtual std::string missing(actors::worker_context& ctx) const = 0;
  /// The deadline passed: consider the wait satisfied.
  virtual void give_up(actors::worker_context& ctx) = 0;

  actors::peer_policy_options opts_;
  std::unique_ptr<optim::optimizer<float>> opt_;
  std::optional<optim::schedule> schedule_;
  /// The neighbours, by increasing rank (none with any_peer).
  std::vector<peer_entry> peers_;
  /// With any_peer: every worker's handle, this worker's rank, the ranks
  /// gone (increasing), and pause markers received by rank (marked_: the
  /// live ranks among them).
  handle_table table_;
  worker_id me_ = 0;
  std::vector<worker_id> gone_;
  std::map<worker_id, std::uint64_t> table_markers_;
  std::size_t marked_ = 0;
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
