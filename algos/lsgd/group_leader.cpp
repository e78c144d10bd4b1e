#include "algos/lsgd/group_leader.hpp"

#include <caf/actor_cast.hpp>

#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "algos/lsgd/lsgd_state.hpp"
#include "optim/consensus.hpp"

namespace troupe::algos {

namespace {

/// Its messages' kinds in the probes (actors/probe.hpp).

} // namespace

using namespace messages;

nlohmann::json lsgd_record::to_json() {
  std::lock_guard<std::mutex> guard{mtx};
  auto gs = nlohmann::json::array();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    auto& x = groups[g];
    gs.push_back({{"group", g},
                  {"leader", x.leader},
                  {"score", x.score},
                  {"changes", x.changes},
                  {"rounds", x.rounds},
                  {"skipped_rounds", x.skipped},
                  {"absent_members", x.absent}});
  }
  return {{"groups", gs},
          {"global_leader", global_leader},
          {"global_changes", global_changes},
          {"global_rounds", global_rounds},
          {"global_skipped_rounds", global_skipped},
          {"busy_skipped_rounds", busy_skipped},
          {"messages", messages},
          {"bytes", bytes},
          {"recent_changes", log}};
}

std::uint64_t lsgd_record::changes() {
  std::lock_guard<std::mutex> guard{mtx};
  auto n = global_changes;
  for (auto& g : groups)
    n += g.changes;
  return n;
}

void lsgd_record::note_change(std::string what) {
  log.push_back(std::move(what));
  if (log.size() > 32)
    log.erase(log.begin());
}

void lsgd_record::count(std::uint64_t n) {
  std::lock_guard<std::mutex> guard{mtx};
  ++messages;
  bytes += n;
}

namespace {

using self_ptr = group_leader_actor::stateful_pointer<group_leader_state>;

struct round_state {
  std::uint64_t round = 0;
  bool broadcast = false;
  std::size_t remaining = 0;
  std::vector<optim::leader_score> scores;
  std::vector<std::size_t> answered; ///< member indices, as they answered
  caf::typed_response_promise<score_msg> promise;
};

lsgd_record::group& my_group(group_leader_state& st) {
  return st.config.record->groups.at(st.config.group);
}

void finish_round(self_ptr self, std::shared_ptr<round_state> r, caf::error err,
                  score_msg winner) {
  self->state.busy = false;
  if (err)
    r->promise.deliver(std::move(err));
  else
    r->promise.deliver(winner);
}

void elect_and_lead(self_ptr self, std::shared_ptr<round_state> r) {
  auto& st = self->state;
  auto& c = st.config;
  if (r->scores.empty()) {
    {
      std::lock_guard<std::mutex> guard{c.record->mtx};
      ++my_group(st).skipped;
    }
    finish_round(self, r,
                 caf::make_error(caf::sec::request_timeout,
                                 "no member of group " + std::to_string(c.group)
                                     + " answered for its score"),
                 {});
    return;
  }
  auto best = optim::elect(r->scores);
  auto leader_index = r->answered[best];
  auto rank = r->scores[best].rank;
  auto score = r->scores[best].score;
  score_msg winner{rank, 0, real{score}};
  bool changed = st.leader >= 0 && st.leader != rank;
  st.leader = rank;
  std::uint64_t changes = 0;
  {
    std::lock_guard<std::mutex> guard{c.record->mtx};
    auto& g = my_group(st);
    g.leader = rank;
    g.score = score;
    if (changed) {
      changes = ++g.changes;
      c.record->note_change("round " + std::to_string(r->round) + ": group "
                            + std::to_string(c.group) + " -> worker "
                            + std::to_string(rank));
    }
  }
  st.probe->gauge("leader", static_cast<double>(rank));
  st.probe->gauge("leader_score", score);
  if (changed) {
    st.probe->gauge("leader_changes", static_cast<double>(changes));
    if (c.coordinator)
      self->send(c.coordinator, leader_atom::value, c.group,
                 "worker " + std::to_string(rank), changes);
  }
  if (!r->broadcast || r->answered.size() < 2) {
    finish_round(self, r, {}, winner);
    return;
  }
  lead_msg m;
  m.round = r->round;
  m.global = false;
  m.lambda = c.lambda;
  for (auto i : r->answered)
    if (i != leader_index)
      m.targets.push_back(caf::actor_cast<caf::actor>(c.members[i]));
  st.probe->sent(lead_kind, actors::small_message_bytes);
  c.record->count(actors::small_message_bytes + 16 * m.targets.size());
  self->request(c.members[leader_index], c.timeout, std::move(m))
      .then(
          [self, r, winner](ack_atom) {
            auto& st = self->state;
            {
              std::lock_guard<std::mutex> guard{st.config.record->mtx};
              ++my_group(st).rounds;
            }
            st.probe->progress();
            finish_round(self, r, {}, winner);
          },
          [self, r, rank](caf::error& err) {
            auto& st = self->state;
            {
              std::lock_guard<std::mutex> guard{st.config.record->mtx};
              ++my_group(st).skipped;
            }
            st.probe->error();
            actors::detail::log().warn(
                "group {}: leader worker {} did not broadcast "
                "in round {} ({}); the round is skipped",
                st.config.group, rank, r->round, self->system().render(err));
            finish_round(self, r,
                         caf::make_error(caf::sec::request_timeout,
                                         "the leader of group "
                                             + std::to_string(st.config.group)
                                             + " did not answer"),
                         {});
          });
}

} // namespace

group_leader_actor::behavior_type group_leader(self_ptr self,
                                               group_leader_config config) {
  auto& st = self->state;
  st.config = std::move(config);
  st.probe = actors::make_probe(
      self, "group " + std::to_string(st.config.group), "group_leader", false);
  st.probe->activity("idle");
  if (st.config.state)
    restore(st, *st.config.state);
  return {
      [self](save_atom) -> caf::result<std::string> {
        if (!actors::detail::from_here(self))
          return actors::detail::refuse(
              self, "group leader " + std::to_string(self->state.config.group),
              "save", "this process");
        return encode(saved_of(self->state));
      },
      [self](round_atom, std::uint64_t round,
             bool broadcast) -> caf::result<score_msg> {
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, round_kind,
                                actors::small_message_bytes);
        if (st.busy)
          return caf::make_error(caf::sec::request_timeout,
                                 "group " + std::to_string(st.config.group)
                                     + " is still in its previous round");
        st.busy = true;
        st.probe->activity("electing");
        auto r = std::make_shared<round_state>();
        r->round = round;
        r->broadcast = broadcast;
        r->remaining = st.config.members.size();
        r->promise = self->make_response_promise<score_msg>();
        auto one_done = [self, r] {
          if (--r->remaining == 0) {
            self->state.probe->activity("idle");
            elect_and_lead(self, r);
          }
        };
        for (std::size_t i = 0; i < st.config.members.size(); ++i) {
          st.probe->sent(score_kind, actors::small_message_bytes);
          st.config.record->count(actors::small_message_bytes);
          self->request(st.config.members[i], st.config.timeout,
                        score_atom::value)
              .then(
                  [r, i, one_done](score_msg& s) {
                    r->scores.push_back({s.worker, s.score.value});
                    r->answered.push_back(i);
                    one_done();
                  },
                  [self, one_done](caf::error&) {
                    auto& st = self->state;
                    {
                      std::lock_guard<std::mutex> guard{st.config.record->mtx};
                      ++my_group(st).absent;
                    }
                    one_done();
                  });
        }
        return r->promise;
      },
  };
}

} // namespace troupe::algos
