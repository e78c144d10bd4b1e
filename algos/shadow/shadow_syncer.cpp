#include "algos/shadow/shadow_syncer.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include <caf/actor_cast.hpp>
#include <nlohmann/json.hpp>

#include "actors/detail/log.hpp"
#include "algos/shadow/detail/shadow_ops.hpp"
#include "algos/shadow/shadow_state.hpp"

namespace troupe::algos {

namespace {

/// Its messages' kinds in the probes (actors/probe.hpp).

} // namespace

using namespace messages;

double shadow_alpha(const optim::shadow_options& o,
                    std::uint32_t workers) noexcept {
  return o.alpha > 0 ? o.alpha
                     : 0.9 / static_cast<double>(std::max(workers, 1u));
}

double shadow_block_momentum(const optim::shadow_options& o,
                             std::uint32_t workers) noexcept {
  return o.block_momentum >= 0
             ? o.block_momentum
             : 1.0 - 1.0 / static_cast<double>(std::max(workers, 1u));
}

namespace detail {

std::size_t params_of(const shadow_syncer_state& st) {
  return st.config.init ? st.config.init->size() : 0;
}

void next_round(syncer_ptr self) {
  auto& st = self->state;
  bool anyone = std::find(st.member_live.begin(), st.member_live.end(), true)
                != st.member_live.end();
  // Through the clock even without a pause, as the workers' steps
  // (worker_config::yield_steps): a syncer looping on its own mailbox would
  // keep its scheduler thread.
  auto pause = anyone ? st.config.opts.period : std::chrono::milliseconds{10};
  st.timer = true;
  self->delayed_send(self, pause, step_atom::value);
}

void end_round(syncer_ptr self) {
  auto& st = self->state;
  ++st.rounds;
  st.seconds_in_rounds += actors::seconds_since(self, st.round_start);
  for (std::size_t i = 0; i < st.have.size(); ++i)
    if (st.have[i]) {
      st.steps_between
          += st.steps_at[i] - std::min(st.steps_at[i], st.last_steps[i]);
      st.last_steps[i] = st.steps_at[i];
    }
  st.in_round = st.exchanging = false;
  st.inbox.erase(st.inbox.begin(), st.inbox.upper_bound(st.round));
  st.probe->progress();
  st.probe->gauge("rounds", static_cast<double>(st.rounds));
  st.probe->activity("between rounds");
  if (st.paused)
    after_round_paused(self);
  else if (!st.timer) // one chain of rounds (a drain may start one early)
    next_round(self);
}

/// Sends member i the correction target - snapshot_i.
void correct(syncer_ptr self, std::size_t i, const float* target) {
  auto& st = self->state;
  auto n = params_of(st);
  std::vector<float> d(n);
  optim::shadow_delta(target, st.snapshots[i].data(), d.data(), n);
  delta_msg m{st.round, tensor{std::move(d)}};
  auto bytes = wire_size(m);
  ++st.messages;
  st.bytes += bytes;
  ++st.corrections;
  st.probe->sent(delta_kind, bytes);
  self->send(st.config.members[i], std::move(m));
}

} // namespace detail

using detail::correct;
using detail::end_round;
using detail::fetch_center;
using detail::params_of;
using detail::start_round;
using detail::syncer_ptr;
using self_ptr = syncer_ptr;

namespace {

/// MA / BMUF: the mean of every syncer's sum (in syncer order, so every
/// syncer computes the same bits), then each member's correction.
void combine(self_ptr self) {
  auto& st = self->state;
  auto n = params_of(st);
  std::vector<double> sum(n, 0.0);
  std::uint64_t count = 0;
  for (auto& [index, m] : st.inbox[st.round]) {
    if (m.sum.size() != n || m.count == 0)
      continue;
    optim::accumulate(sum, m.sum.data(), n);
    count += m.count;
  }
  if (count > 0) {
    std::vector<float> avg(n);
    for (std::size_t j = 0; j < n; ++j)
      avg[j] = static_cast<float>(sum[j] / static_cast<double>(count));
    const float* target = avg.data();
    if (st.bmuf) {
      optim::bmuf_update(
          *st.bmuf, avg,
          shadow_block_momentum(st.config.opts, st.config.workers),
          st.config.opts.block_lr);
      target = st.bmuf->start.data();
    }
    for (std::size_t i = 0; i < st.have.size(); ++i)
      if (st.have[i])
        correct(self, i, target);
  }
  end_round(self);
}

void check_exchange(self_ptr self) {
  auto& st = self->state;
  if (!st.exchanging)
    return;
  auto& got = st.inbox[st.round];
  for (std::uint32_t p = 0; p < st.peers.size(); ++p)
    if (st.peer_live[p] && got.count(p) == 0)
      return;
  combine(self);
}

void snapshots_done(self_ptr self) {
  auto& st = self->state;
  if (!st.config.shards.empty()) { // S-EASGD: a center on the shards
    fetch_center(self);
    return;
  }
  auto n = params_of(st);
  std::vector<double> sum(n, 0.0);
  std::uint32_t count = 0;
  for (std::size_t i = 0; i < st.have.size(); ++i)
    if (st.have[i]) {
      optim::accumulate(sum, st.snapshots[i].data(), n);
      ++count;
    }
  std::vector<float> s(sum.begin(), sum.end());
  shadow_msg mine{st.config.index, st.round, count, tensor{std::move(s)}};
  auto bytes = wire_size(mine);
  for (std::uint32_t p = 0; p < st.peers.size(); ++p)
    if (st.peer_live[p]) {
      ++st.messages;
      st.bytes += bytes;
      st.probe->sent(shadow_kind, bytes);
      self->send(caf::actor_cast<shadow_syncer_actor>(st.peers[p]), mine);
    }
  st.inbox[st.round][st.config.index] = std::move(mine);
  st.exchanging = true;
  self->delayed_send(self, actors::to_chrono(st.config.timeout),
                     tick_atom::value, st.round);
  st.probe->activity("averaging");
  check_exchange(self);
}

} // namespace

void detail::start_round(self_ptr self) {
  auto& st = self->state;
  // Paused for a checkpoint: only the rounds up to drain_to.
  if (st.in_round || (st.paused && st.round >= st.drain_to))
    return;
  st.in_round = true;
  ++st.round;
  st.round_start = actors::now(self);
  st.probe->activity("snapshotting");
  auto m = st.config.members.size();
  st.have.assign(m, false);
  auto pending = std::make_shared<std::size_t>(0);
  for (std::size_t i = 0; i < m; ++i)
    if (st.member_live[i])
      ++*pending;
  if (*pending == 0) {
    snapshots_done(self);
    return;
  }
  auto n = params_of(st);
  fetch_msg f{std::numeric_limits<worker_id>::max(), 0, n, 0};
  for (std::size_t i = 0; i < m; ++i) {
    if (!st.member_live[i])
      continue;
    ++st.messages;
    st.bytes += wire_size(f);
    st.probe->sent(actors::msg_type::fetch, wire_size(f));
    self->request(st.config.members[i], st.config.timeout, f)
        .then(
            [self, i, pending, n](params_msg& p) {
              auto& st = self->state;
              auto scope = on_message(st.probe.get(), self,
                                      actors::msg_type::params, wire_size(p));
              if (p.values.size() == n) {
                st.snapshots[i].resize(n);
                p.values.copy_to(st.snapshots[i].data());
                st.steps_at[i] = p.version;
                st.have[i] = true;
              }
              if (--*pending == 0)
                snapshots_done(self);
            },
            [self, i, pending](caf::error& err) {
              auto& st = self->state;
              st.member_live[i] = false;
              actors::detail::log().warn(
                  "shadow syncer {}: worker {} is gone ({}); "
                  "no longer synchronized",
                  st.config.index,
                  i < st.config.ids.size() ? st.config.ids[i] : i,
                  self->system().render(err));
              if (--*pending == 0)
                snapshots_done(self);
            });
  }
}

namespace {

void syncer_gone(self_ptr self, std::uint32_t p) {
  auto& st = self->state;
  if (p >= st.peer_live.size() || !st.peer_live[p])
    return;
  st.peer_live[p] = false;
  actors::detail::log().warn("shadow syncer {}: syncer {} is gone",
                             st.config.index, p);
  check_exchange(self);
}

std::string stats_json(const shadow_syncer_state& st) {
  auto member_rounds = 0.0;
  nlohmann::json ids = st.config.ids; // empty on a node: ranks unknown
  std::size_t live = 0;
  for (bool l : st.member_live)
    live += l ? 1 : 0;
  member_rounds = static_cast<double>(st.rounds) * static_cast<double>(live);
  nlohmann::json out{
      {"syncer", st.config.index},
      {"workers", ids},
      {"mode", st.config.opts.mode},
      {"rounds", st.rounds},
      {"timeouts", st.timeouts},
      {"corrections", st.corrections},
      {"messages", st.messages},
      {"bytes", st.bytes},
      {"pushes", st.pushes},
      {"seconds_per_round",
       st.rounds > 0 ? st.seconds_in_rounds / static_cast<double>(st.rounds)
                     : 0.0},
      {"sync_gap", member_rounds > 0
                       ? static_cast<double>(st.steps_between) / member_rounds
                       : 0.0}};
  return out.dump();
}

} // namespace

shadow_syncer_actor::behavior_type shadow_syncer(self_ptr self,
                                                 shadow_syncer_config config) {
  auto& st = self->state;
  st.config = std::move(config);
  auto m = st.config.members.size();
  auto n = params_of(st);
  st.member_live.assign(m, true);
  for (std::size_t i = 0; i < m; ++i)
    st.member_live[i] = static_cast<bool>(st.config.members[i]);
  st.snapshots.assign(m, {});
  st.steps_at.assign(m, 0);
  st.last_steps.assign(m, 0);
  st.versions.assign(st.config.shards.size(), 0);
  st.center.assign(n, 0.0f);
  if (st.config.opts.mode == "bmuf" && st.config.init)
    st.bmuf.emplace(*st.config.init);
  if (st.config.state) // a resumed job (checked before the spawn)
    restore(st, *st.config.state);
  st.probe = actors::make_probe(
      self, "shadow syncer " + std::to_string(st.config.index), "shadow_syncer",
      true);
  st.probe->activity("waiting for peers");
  // A syncer that died (its node was lost) is no longer awaited.
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    for (std::uint32_t p = 0; p < st.peers.size(); ++p)
      if (st.peers[p] && st.peers[p].address() == msg.source)
        syncer_gone(self, p);
  });
  return {
      [self](peers_atom, std::vector<caf::actor>& peers) {
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, actors::msg_type::peers,
                                actors::small_message_bytes * peers.size());
        if (!st.peers.empty())
          return;
        st.peers = std::move(peers);
        st.peer_live.assign(st.peers.size(), false);
        for (std::size_t p = 0; p < st.peers.size(); ++p) {
          st.peer_live[p] = st.peers[p] && p != st.config.index;
          if (st.peer_live[p])
            self->monitor(st.peers[p]);
        }
        start_round(self);
      },
      [self](shadow_msg& m) {
        auto& st = self->state;
        auto scope
            = on_message(st.probe.get(), self, shadow_kind, wire_size(m));
        bool done = m.round < st.round || (m.round == st.round && !st.in_round);
        // A peer may start its first round before this syncer has its peer
        // list: its sums are kept, not dropped (dropping them left this
        // syncer waiting out the whole timeout in its first round). A
        // syncer's index is below the job's worker count.
        auto known = st.peers.empty() ? std::size_t{st.config.workers}
                                      : st.peers.size();
        if (done || m.syncer >= known)
          return; // its round ended at the timeout here
        auto round = m.round;
        st.inbox[round][m.syncer] = std::move(m);
        if (round == st.round)
          check_exchange(self);
      },
      [self](leave_atom, std::uint32_t g) { syncer_gone(self, g); },
      [self](step_atom) {
        self->state.timer = false;
        start_round(self);
      },
      [self](tick_atom, std::uint64_t round) {
        auto& st = self->state;
        if (!st.exchanging || round != st.round)
          return;
        ++st.timeouts;
        std::string missing;
        for (std::uint32_t p = 0; p < st.peers.size(); ++p)
          if (st.peer_live[p] && st.inbox[round].count(p) == 0)
            missing += " " + std::to_string(p);
        actors::detail::log().warn(
            "shadow syncer {}: round {} without the sums of "
            "syncer(s){} (request timeout); averaging the rest",
            st.config.index, round, missing);
        combine(self);
      },
      [self](stats_atom) { return stats_json(self->state); },
      [self](pause_atom) { return detail::pause(self); },
      [self](pause_atom, std::uint64_t r) { return detail::drain(self, r); },
      [self](save_atom) { return detail::save(self); },
      [self](resume_atom) { detail::resume(self); },
      [self](rebind_atom, std::uint32_t k, caf::actor& h) {
        detail::rebind_center(self, k, h);
      },
  };
}

} // namespace troupe::algos
