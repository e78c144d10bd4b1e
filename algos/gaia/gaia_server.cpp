#include "algos/gaia/gaia_server.hpp"

#include <algorithm>
#include <limits>

#include <caf/actor_cast.hpp>
#include <caf/event_based_actor.hpp>
#include <nlohmann/json.hpp>

#include "actors/clock.hpp"
#include "actors/comm_policy.hpp"
#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "actors/parameter_shard.hpp"
#include "messages/errors.hpp"
#include "messages/shm.hpp"
#include "optim/dataset.hpp"
#include "optim/gaia.hpp"
#include "optim/param_hash.hpp"

namespace troupe::algos {

using namespace messages;
using actors::msg_type;
using actors::on_message;

namespace {

using gaia_self = gaia_server_actor::stateful_pointer<gaia_server_state>;

const msg_type mirror_kind = actors::message_kind("mirror");

std::uint64_t clock_of(const gaia_server_state& st) {
  return st.updates / std::max<std::uint32_t>(st.config.members, 1);
}

/// The slowest live peer's clock (none: no live peer).
std::optional<std::uint64_t> slowest_peer(const gaia_server_state& st) {
  std::optional<std::uint64_t> least;
  for (std::size_t g = 0; g < st.peers.size(); ++g)
    if (st.peer_live[g])
      least
          = std::min(least.value_or(std::numeric_limits<std::uint64_t>::max()),
                     st.peer_clocks[g]);
  return least;
}

/// Whether a fetch may be answered now (the mirror clock's bound).
bool within_bound(const gaia_server_state& st) {
  if (!st.config.mirror_bound)
    return true;
  auto least = slowest_peer(st);
  return !least || clock_of(st) <= *least + *st.config.mirror_bound;
}

/// The reply to a fetch, as a shard's: to another process of this host
/// straight into its shared-memory segment (`remote`: the requester's
/// node if in another process).
params_msg snapshot(gaia_server_state& st, const caf::node_id& remote) {
  params_msg reply;
  reply.version = st.store->version();
  reply.offset = 0;
  reply.values
      = tensor::shared_copy(remote ? shm::channel_to(remote) : nullptr,
                            st.store->params(), st.store->range().size);
  ++st.messages;
  st.bytes += wire_size(reply);
  return reply;
}

void serve_held(gaia_server_state& st, bool anyway) {
  if (st.held.empty() || (!anyway && !within_bound(st)))
    return;
  auto held = std::move(st.held);
  st.held.clear();
  for (auto& h : held)
    h.promise.deliver(snapshot(st, h.remote));
}

/// Sends the significant changes not yet sent (and the clock, if it moved
/// under a bound) to every live peer.
void mirror(gaia_self self) {
  auto& st = self->state;
  auto n = st.store->range().size;
  double lr = st.store->current_lr();
  if (st.lr0 <= 0)
    st.lr0 = lr;
  mirror_msg m;
  m.group = st.config.group;
  m.clock = clock_of(st);
  m.size = n;
  auto threshold = optim::significance_at(st.config.significance, lr, st.lr0);
  auto taken = optim::take_significant(st.store->params(), st.base.data(), n,
                                       threshold, m.packed);
  st.checked += n;
  bool clock_moved = st.config.mirror_bound && m.clock > st.last_clock_sent;
  if (taken == 0 && !clock_moved)
    return;
  st.sent_entries += taken;
  st.last_clock_sent = m.clock;
  m.seq = ++st.seq;
  for (std::size_t g = 0; g < st.peers.size(); ++g)
    if (st.peer_live[g]) {
      self->send(st.peers[g], m);
      ++st.mirror_messages;
      st.mirror_bytes += wire_size(m);
    }
  if (st.probe)
    st.probe->sent(mirror_kind, wire_size(m));
}

void on_push(gaia_self self, push_msg& p) {
  auto& st = self->state;
  auto r = st.store->push(p.worker, p.seq, p.version, p.offset, p.values.data(),
                          p.values.size());
  if (r.status != optim::push_status::applied) {
    actors::detail::log().warn("Gaia server {}: push {} of worker {}: {}",
                               st.config.group, p.seq, p.worker,
                               optim::to_string(r.status));
    return;
  }
  actors::did_work(self, actors::work_kind::update, p.values.size());
  ++st.updates;
  if (st.probe) {
    st.probe->progress();
    st.probe->gauge("version", static_cast<double>(r.version));
  }
  if (!st.peers.empty())
    mirror(self);
  serve_held(st, false);
}

void on_mirror(gaia_self self, mirror_msg& m) {
  auto& st = self->state;
  auto g = m.group;
  if (g >= st.peers.size() || !st.peers[g] || self->current_sender() == nullptr
      || caf::actor_cast<caf::actor_addr>(self->current_sender())
             != st.peers[g].address()) {
    actors::detail::log_refusal("Gaia server " + std::to_string(st.config.group)
                                + ": refused changes claimed for group "
                                + std::to_string(g)
                                + " from an actor that is not its server");
    ++st.refused_blocks;
    return;
  }
  auto n = st.store->range().size;
  try {
    if (m.size != n)
      throw optim::data_error("a block for a model of " + std::to_string(m.size)
                              + " values, this one has " + std::to_string(n));
    optim::apply_significant(m.packed, st.store->mutable_params(),
                             st.base.data(), n);
  } catch (const optim::data_error& e) {
    actors::detail::log_refusal("Gaia server " + std::to_string(st.config.group)
                                + ": refused group " + std::to_string(g)
                                + "'s changes: " + e.what());
    ++st.refused_blocks;
    return;
  }
  actors::did_work(self, actors::work_kind::update,
                   m.packed.size() / optim::significant_entry_bytes);
  st.received_entries += m.packed.size() / optim::significant_entry_bytes;
  ++st.received_messages;
  st.peer_clocks[g] = std::max(st.peer_clocks[g], m.clock);
  st.peer_quiet[g] = false;
  serve_held(st, false);
}

/// The save under way is answered once every live peer's marker of its
/// round came: each one's changes sent before it are applied here.
void check_save(gaia_server_state& st) {
  if (!st.saving)
    return;
  const auto& got = st.markers[st.save_round];
  for (std::size_t g = 0; g < st.peers.size(); ++g)
    if (st.peer_live[g] && !got.count(static_cast<std::uint32_t>(g)))
      return;
  auto promise = std::move(*st.saving);
  st.saving.reset();
  st.markers.erase(st.markers.begin(), st.markers.upper_bound(st.save_round));
  promise.deliver(save_gaia_server(st));
}

std::string figures(const gaia_server_state& st) {
  nlohmann::json j{
      {"group", st.config.group},
      {"updates", st.updates},
      {"clock", clock_of(st)},
      {"entries_checked", st.checked},
      {"entries_sent", st.sent_entries},
      {"mirror_messages", st.mirror_messages},
      {"mirror_bytes", st.mirror_bytes},
      {"entries_received", st.received_entries},
      {"messages_received", st.received_messages},
      {"refused_blocks", st.refused_blocks},
      {"held_fetches", st.held_fetches},
      {"bound_timeouts", st.bound_timeouts},
      {"messages", st.messages + st.mirror_messages},
      {"bytes", st.bytes + st.mirror_bytes},
      {"params_hash",
       optim::hash_params(st.store->params(), st.store->range().size)},
  };
  return j.dump();
}

} // namespace

gaia_server_actor::behavior_type gaia_server(gaia_self self,
                                             gaia_server_config config) {
  auto& st = self->state;
  auto n = config.init->size();
  st.store = std::make_unique<optim::shard_store<float>>(
      optim::slice{0, n}, config.init->data(), config.store);
  st.base.assign(config.init->begin(), config.init->end());
  st.config = std::move(config);
  if (st.config.state) // checked by the run before the spawn
    load_gaia_server(st, *st.config.state);
  st.probe = actors::make_probe(
      self, "gaia server " + std::to_string(st.config.group), "shard", true);
  st.probe->activity("serving");
  self->set_down_handler([self](caf::down_msg& d) {
    auto& st = self->state;
    for (std::size_t g = 0; g < st.peers.size(); ++g)
      if (st.peer_live[g] && st.peers[g].address() == d.source) {
        st.peer_live[g] = false; // its clock no longer holds anyone back
        actors::detail::log().warn("Gaia server {}: group {}'s server is gone",
                                   st.config.group, g);
      }
    serve_held(st, false);
    check_save(st);
  });
  return {
      [self](push_msg& p) {
        auto scope = on_message(self->state.probe.get(), self, msg_type::push,
                                wire_size(p));
        on_push(self, p);
      },
      [self](compressed_push_msg& c) {
        auto scope = on_message(self->state.probe.get(), self, msg_type::push,
                                wire_size(c));
        actors::detail::log_refusal("Gaia server "
                                    + std::to_string(self->state.config.group)
                                    + ": a compressed push (not used by "
                                      "Gaia) dropped");
      },
      [self](const fetch_msg& f) -> caf::result<params_msg> {
        auto& st = self->state;
        auto scope
            = on_message(st.probe.get(), self, msg_type::fetch, wire_size(f));
        auto n = st.store->range().size;
        if (f.offset != 0 || f.size != n)
          return make_error(errc::bad_request,
                            "Gaia server " + std::to_string(st.config.group)
                                + ": a fetch of another range than [0, "
                                + std::to_string(n) + ")");
        caf::node_id remote;
        if (auto& from = self->current_sender();
            from && from->node() != self->node())
          remote = from->node();
        if (within_bound(st))
          return snapshot(st, remote);
        ++st.held_fetches;
        auto promise = self->make_response_promise<params_msg>();
        st.held.push_back({promise, ++st.ticks, remote});
        self->delayed_send(self, actors::to_chrono(st.config.bound_wait),
                           tick_atom::value, st.ticks);
        return promise;
      },
      [self](tick_atom, std::uint64_t tick) {
        auto& st = self->state;
        if (self->current_sender() != self->ctrl() || st.held.empty()
            || st.held.front().tick > tick)
          return;
        // The slowest peers held it too long (their workers may all be
        // gone): left out of the bound until they send again.
        ++st.bound_timeouts;
        if (auto least = slowest_peer(st))
          for (std::size_t g = 0; g < st.peers.size(); ++g)
            if (st.peer_live[g] && st.peer_clocks[g] == *least)
              st.peer_quiet[g] = true;
        serve_held(st, true);
      },
      [](track_atom, worker_id, std::uint64_t) {
        // Gaia's servers keep no per-worker clocks.
      },
      [](untrack_atom, worker_id) {},
      [self](stats_atom) -> shard_stats {
        auto& st = self->state;
        auto out = actors::store_stats(*st.store);
        out.shard = st.config.group;
        out.messages = st.messages;
        out.bytes = st.bytes;
        return out;
      },
      [self](stats_atom, members_atom) { return figures(self->state); },
      [self](flush_atom) { return self->state.store->version(); },
      [self](save_atom) -> caf::result<std::string> {
        auto& st = self->state;
        if (!actors::detail::from_owner_node(self, st.config.owner))
          return actors::detail::refuse(
              self, "Gaia server " + std::to_string(st.config.group), "save",
              "the coordinator's node");
        if (st.saving)
          return make_error(errc::bad_request, "a save is under way");
        ++st.save_round;
        for (std::size_t g = 0; g < st.peers.size(); ++g)
          if (st.peer_live[g])
            self->send(st.peers[g], flush_atom::value, st.config.group,
                       st.save_round);
        st.saving = self->make_response_promise<std::string>();
        auto promise = *st.saving;
        check_save(st);
        return promise;
      },
      [self](flush_atom, std::uint32_t g, std::uint64_t round) {
        auto& st = self->state;
        if (g >= st.peers.size() || !st.peers[g]
            || caf::actor_cast<caf::actor_addr>(self->current_sender())
                   != st.peers[g].address())
          return;
        st.markers[round].insert(g);
        check_save(st);
      },
      [](replicate_atom, caf::actor&) -> caf::result<bool> {
        return make_error(errc::bad_request, "Gaia's servers have no backups");
      },
      [](replicate_atom, const std::string&) -> caf::result<bool> {
        return make_error(errc::bad_request, "Gaia's servers have no backups");
      },
      [](replicate_atom, push_msg&) {},
      [](replicate_atom, compressed_push_msg&) {},
      [self](peers_atom, std::vector<caf::actor>& peers) {
        auto& st = self->state;
        if (!actors::detail::from_owner_node(self, st.config.owner)) {
          actors::detail::refuse(self, "a Gaia server", "peers",
                                 "the coordinator's node");
          return;
        }
        if (!st.peers.empty() || peers.size() != st.config.groups)
          return;
        for (auto& p : peers)
          st.peers.push_back(caf::actor_cast<gaia_peer_actor>(p));
        st.peer_clocks.assign(st.peers.size(), 0);
        if (st.saved_clocks.size() == st.peers.size())
          st.peer_clocks = st.saved_clocks;
        st.peer_live.assign(st.peers.size(), false);
        st.peer_quiet.assign(st.peers.size(), false);
        for (std::size_t g = 0; g < st.peers.size(); ++g) {
          if (g == st.config.group)
            st.peers[g] = nullptr;
          st.peer_live[g] = static_cast<bool>(st.peers[g]);
          if (st.peer_live[g])
            self->monitor(st.peers[g]);
        }
      },
      [self](mirror_msg& m) {
        auto scope = on_message(self->state.probe.get(), self, mirror_kind,
                                wire_size(m));
        on_mirror(self, m);
      },
  };
}

} // namespace troupe::algos
