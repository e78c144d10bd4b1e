// The base of the peer-to-peer policies (peer_policy.hpp): the peers'
// handles and who is gone, pause markers, leaving, and the checks of a
// peer's payload.

#include "algos/peer_policy.hpp"

namespace troupe::algos::detail {

namespace {

/// (atom, the worker's rank) to a peer, counted as a small message.
template <class Atom>
void notify(actors::worker_context& ctx, const caf::actor& to, Atom atom,
            actors::msg_type kind) {
  ctx.self()->send(caf::actor_cast<peer_worker_actor>(to), atom, ctx.id());
  ctx.count_sent(kind, actors::small_message_bytes);
}

} // namespace

void peer_policy::on_peers(actors::worker_context&,
                           const std::vector<worker_id>& ranks,
                           const std::vector<caf::actor>& handles) {
  for (std::size_t i = 0; i < ranks.size() && i < handles.size(); ++i)
    if (auto* e = peer(ranks[i]))
      e->handle = handles[i];
  for (auto& e : peers_) {
    e.gone = !e.handle;
    e.markers = 0;
  }
  have_peers_ = true;
}

void peer_policy::on_peer_table(actors::worker_context& ctx,
                                const handle_table& t) {
  table_ = t;
  me_ = ctx.id();
  gone_.clear();
  for (worker_id r = 0; r < t.size(); ++r)
    if (r != me_ && !t[r])
      gone_.push_back(r);
  table_markers_.clear();
  marked_ = 0;
  have_peers_ = true;
}

void peer_policy::on_peer_gone(actors::worker_context& ctx, worker_id r) {
  if (table_.size() > 0) {
    if (r >= table_.size() || r == me_ || is_gone(r))
      return;
    gone_.insert(std::upper_bound(gone_.begin(), gone_.end(), r), r);
    if (table_markers_.count(r) > 0)
      --marked_;
  } else {
    auto* e = peer(r);
    if (!e || e->gone)
      return;
    e->gone = true;
  }
  actors::detail::log().debug("worker {}: peer {} left or died", ctx.id(), r);
  recheck(ctx);
  check_markers();
}

void peer_policy::quiesce(actors::worker_context& ctx,
                          std::function<void()> done) {
  auto other = actors::msg_type::other;
  for (worker_id r = 0; r < table_.size(); ++r) // any_peer: every worker
    if (live(r))
      notify(ctx, table_[r], flush_atom::value, other);
  for (auto& e : peers_)
    if (live(e))
      notify(ctx, e.handle, flush_atom::value, other);
  quiescing_ = std::move(done);
  check_markers();
}

void peer_policy::on_finish(actors::worker_context& ctx) {
  waiting_ = nullptr;
  auto leave = actors::msg_type::leave;
  if (table_.size() > 0)
    for (auto r : told_of_finish(ctx))
      if (live(r))
        notify(ctx, table_[r], leave_atom::value, leave);
  for (auto& e : peers_)
    if (live(e))
      notify(ctx, e.handle, leave_atom::value, leave);
}

void peer_policy::on_timeout(actors::worker_context& ctx, std::uint64_t seq) {
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

void peer_policy::save_base(optim::state_writer& w,
                            const std::string& prefix) const {
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

void peer_policy::load_base(const optim::state_reader& r,
                            const std::string& prefix) {
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

void peer_policy::check_markers() {
  if (!quiescing_)
    return;
  if (table_.size() > 0) { // any_peer: a marker from every live worker
    if (marked_ + gone_.size() + 1 < table_.size())
      return;
    marked_ = 0;
    for (auto it = table_markers_.begin(); it != table_markers_.end();)
      if (is_gone(it->first) || --it->second == 0)
        it = table_markers_.erase(it);
      else {
        ++marked_;
        ++it;
      }
    auto done = std::move(quiescing_);
    quiescing_ = nullptr;
    done();
    return;
  }
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

bool peer_policy::acceptable(actors::worker_context& ctx, const char* what,
                             worker_id sender, const tensor& values,
                             std::size_t n) const {
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

} // namespace troupe::algos::detail
