#include "algos/lsgd/leader_board.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include <caf/actor_cast.hpp>

#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "algos/lsgd/lsgd_state.hpp"

namespace troupe::algos {

namespace {

/// Its messages' kinds in the probes (actors/probe.hpp).

} // namespace

using namespace messages;

round_kinds rounds_at(std::uint64_t t, std::uint32_t workers,
                      const optim::lsgd_options& o) noexcept {
  round_kinds k;
  if (t == 0 || workers == 0)
    return k;
  auto local = std::uint64_t{workers} * std::max<std::uint64_t>(o.tau, 1);
  auto global = std::uint64_t{workers} * std::max<std::uint64_t>(o.tau_g, 1);
  bool several = o.groups > 1;
  k.global = several && t % global == 0;
  k.local = t % local == 0 && !(several && o.tau_g == o.tau);
  return k;
}

std::vector<std::uint32_t>
lsgd_groups(std::uint32_t workers, std::uint32_t groups,
            const std::vector<std::int32_t>& node_of) {
  std::vector<std::uint32_t> out(workers, 0);
  if (!node_of.empty()) {
    std::map<std::int32_t, std::uint32_t> ids;
    for (std::uint32_t w = 0; w < workers; ++w) {
      auto n = w < node_of.size() ? node_of[w] : -1;
      auto it = ids.find(n);
      if (it == ids.end())
        it = ids.emplace(n, static_cast<std::uint32_t>(ids.size())).first;
      out[w] = it->second;
    }
    return out;
  }
  groups = std::max<std::uint32_t>(1, std::min(groups, workers));
  for (std::uint32_t w = 0; w < workers; ++w)
    out[w] = static_cast<std::uint32_t>(std::uint64_t{w} * groups / workers);
  return out;
}

namespace {

using board_ptr = leader_board_actor::stateful_pointer<leader_board_state>;

round_kinds kinds_of(const leader_board_state& st, std::uint64_t t) {
  return rounds_at(t, static_cast<std::uint32_t>(st.config.workers.size()),
                   st.config.opts);
}

/// A trigger `t` (of kinds `k`) arrived while a round was under way or a
/// checkpoint was paused: it is held to run next. One trigger is held, the
/// latest global one if any (a global round is never lost to a local one
/// still running; a local round also runs inside a global one); the trigger
/// it displaces, or that is refused, counts as skipped.
void hold(leader_board_state& st, std::uint64_t t, round_kinds k) {
  if (st.held > 0) {
    std::lock_guard<std::mutex> guard{st.config.record->mtx};
    ++st.config.record->busy_skipped;
    if (!k.global && kinds_of(st, st.held).global)
      return;
  }
  st.held = t;
}

void start_round(board_ptr self, std::uint64_t t, round_kinds k);

/// The round under way is over: a pause waiting for it is answered, else a
/// trigger held meanwhile runs.
void round_over(board_ptr self) {
  auto& st = self->state;
  st.busy = false;
  if (st.pause_reply) {
    st.pause_reply->deliver(ack_atom::value);
    st.pause_reply.reset();
  }
  if (!st.paused)
    if (auto t = std::exchange(st.held, 0); t > 0)
      start_round(self, t, kinds_of(st, t));
}

void global_round(board_ptr self, std::uint64_t round,
                  std::vector<optim::leader_score> winners) {
  auto& st = self->state;
  auto& c = st.config;
  if (winners.empty()) {
    {
      std::lock_guard<std::mutex> guard{c.record->mtx};
      ++c.record->global_skipped;
    }
    round_over(self);
    return;
  }
  auto leader = winners[optim::elect(winners)].rank;
  bool changed = leader != st.global_leader;
  st.global_leader = leader;
  std::uint64_t changes = 0;
  {
    std::lock_guard<std::mutex> guard{c.record->mtx};
    c.record->global_leader = leader;
    if (changed) {
      changes = ++c.record->global_changes;
      c.record->note_change("round " + std::to_string(round)
                            + ": global -> worker " + std::to_string(leader));
    }
  }
  st.probe->gauge("global_leader", leader);
  if (changed) {
    st.probe->gauge("global_changes", static_cast<double>(changes));
    if (c.coordinator)
      self->send(c.coordinator, leader_atom::value,
                 static_cast<std::uint32_t>(c.groups.size()),
                 "worker " + std::to_string(leader), changes);
  }
  lead_msg m;
  m.round = round;
  m.global = true;
  m.lambda = c.opts.lambda_g;
  for (std::size_t w = 0; w < c.workers.size(); ++w)
    if (w != leader && st.live[w])
      m.targets.push_back(caf::actor_cast<caf::actor>(c.workers[w]));
  st.probe->sent(lead_kind, actors::small_message_bytes);
  c.record->count(actors::small_message_bytes + 16 * m.targets.size());
  self->request(c.workers.at(leader), c.timeout, std::move(m))
      .then(
          [self](ack_atom) {
            auto& st = self->state;
            {
              std::lock_guard<std::mutex> guard{st.config.record->mtx};
              ++st.config.record->global_rounds;
            }
            st.probe->progress();
            round_over(self);
          },
          [self, leader](caf::error& err) {
            auto& st = self->state;
            {
              std::lock_guard<std::mutex> guard{st.config.record->mtx};
              ++st.config.record->global_skipped;
            }
            st.probe->error();
            actors::detail::log().warn("the global leader worker {} did not "
                                       "broadcast ({}); the round is skipped",
                                       leader, self->system().render(err));
            round_over(self);
          });
}

/// Every group answered (or failed): a global round if due; with a single
/// group its leader is the global leader.
void groups_done(board_ptr self, std::uint64_t round, round_kinds k,
                 std::vector<optim::leader_score> winners) {
  auto& st = self->state;
  if (k.global) {
    global_round(self, round, std::move(winners));
    return;
  }
  if (st.config.groups.size() == 1 && winners.size() == 1) {
    st.global_leader = winners[0].rank;
    std::lock_guard<std::mutex> guard{st.config.record->mtx};
    st.config.record->global_leader = winners[0].rank;
  }
  round_over(self);
}

void start_round(board_ptr self, std::uint64_t t, round_kinds k) {
  auto& st = self->state;
  auto& c = st.config;
  st.busy = true;
  auto round = t / c.workers.size();
  struct pending {
    std::size_t remaining = 0;
    std::vector<optim::leader_score> winners;
  };
  auto p = std::make_shared<pending>();
  p->remaining = c.groups.size();
  for (auto& g : c.groups) {
    st.probe->sent(round_kind, actors::small_message_bytes);
    c.record->count(actors::small_message_bytes);
    // A group's round waits at most for its scores and its leader's
    // broadcast: two of its own timeouts.
    auto wait = c.timeout;
    wait.count *= 3;
    self->request(g, wait, round_atom::value, round, k.local)
        .then(
            [self, p, round, k](score_msg& s) {
              p->winners.push_back({s.worker, s.score.value});
              if (--p->remaining == 0)
                groups_done(self, round, k, std::move(p->winners));
            },
            [self, p, round, k](caf::error&) {
              if (--p->remaining == 0)
                groups_done(self, round, k, std::move(p->winners));
            });
  }
}

} // namespace

leader_board_actor::behavior_type leader_board(board_ptr self,
                                               leader_board_config config) {
  auto& st = self->state;
  st.config = std::move(config);
  st.live.assign(st.config.workers.size(), true);
  st.probe = actors::make_probe(self, "leader board", "leader_board", false);
  st.probe->activity("idle");
  st.probe->gauge("global_leader", 0);
  if (st.config.state) {
    restore(st, *st.config.state);
    // A trigger held at the checkpoint runs first.
    if (auto t = std::exchange(st.held, 0); t > 0)
      self->send(self, round_atom::value, t);
  }
  for (auto& w : st.config.workers)
    self->monitor(w);
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    for (std::size_t w = 0; w < st.config.workers.size(); ++w)
      if (st.config.workers[w].address() == msg.source)
        st.live[w] = false;
    // A lost global leader is replaced by the lowest live rank until the
    // next global election.
    if (!st.live[st.global_leader])
      for (std::size_t w = 0; w < st.live.size(); ++w)
        if (st.live[w]) {
          st.global_leader = static_cast<std::uint32_t>(w);
          break;
        }
  });
  return {
      [self](round_atom, std::uint64_t t) {
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, round_kind,
                                actors::small_message_bytes);
        auto k = kinds_of(st, t);
        if (!k.local && !k.global)
          return;
        if (st.paused || st.busy) // held until the checkpoint or round ends
          return hold(st, t, k);
        start_round(self, t, k);
      },
      [self](fetch_msg& f) {
        auto& st = self->state;
        auto scope = actors::on_message(st.probe.get(), self,
                                        actors::msg_type::fetch, wire_size(f));
        return self->delegate(st.config.workers.at(st.global_leader),
                              std::move(f));
      },
      [self](pause_atom) -> caf::result<ack_atom> {
        auto& st = self->state;
        if (!actors::detail::from_here(self))
          return actors::detail::refuse(self, "the leader board", "pause",
                                        "this process");
        st.paused = true;
        if (!st.busy)
          return ack_atom::value;
        st.pause_reply = self->make_response_promise<ack_atom>();
        return *st.pause_reply;
      },
      [self](save_atom) -> caf::result<std::string> {
        if (!actors::detail::from_here(self))
          return actors::detail::refuse(self, "the leader board", "save",
                                        "this process");
        return encode(saved_of(self->state));
      },
      [self](resume_atom) {
        auto& st = self->state;
        if (!actors::detail::from_here(self) || !st.paused)
          return;
        st.paused = false;
        if (st.pause_reply) { // the round did not end before the pause's
          st.pause_reply->deliver(ack_atom::value); // requester gave up
          st.pause_reply.reset();
        }
        if (!st.busy)
          if (auto t = std::exchange(st.held, 0); t > 0)
            start_round(self, t, kinds_of(st, t));
      },
  };
}

} // namespace troupe::algos
