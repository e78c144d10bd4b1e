#include "algos/shadow/shadow_run.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include <caf/actor_cast.hpp>

#include "actors/coordinator.hpp"
#include "actors/detail/coordinator_ops.hpp"
#include "actors/detail/log.hpp"
#include "actors/roles.hpp"
#include "algos/shadow/shadow.hpp"
#include "optim/dataset.hpp"

namespace troupe::algos {

using namespace actors;
using namespace messages;

void shadow_run::syncers_ready(coordinator_ptr self,
                               const std::function<void()>& ready) {
  std::vector<caf::actor> handles;
  for (auto& s : syncers_)
    handles.push_back(caf::actor_cast<caf::actor>(s));
  for (auto& s : syncers_) {
    self->send(s, peers_atom::value, handles);
    self->monitor(s); // a lost syncer is no longer awaited by the others
  }
  ready();
}

void shadow_run::provision(coordinator_ptr self, std::function<void()> ready) {
  auto& st = self->state;
  auto& c = st.config;
  auto groups = algo_.groups_in(c);
  std::uint32_t count = 0;
  for (auto g : groups)
    count = std::max(count, g + 1);
  if (!resumed_from_.empty() && states_.size() != count) {
    actors::detail::placement_failed(
        self, "cannot resume from " + resumed_from_ + ": it holds the state of "
                  + std::to_string(states_.size())
                  + " shadow syncers, this job has " + std::to_string(count));
    return;
  }
  // The groups' members, and a resumed job's states checked against them
  // before anything is spawned.
  std::vector<std::vector<worker_actor>> members(count);
  std::vector<std::vector<worker_id>> ids(count);
  for (std::uint32_t w = 0; w < c.workers; ++w) {
    members[groups[w]].push_back(st.workers[w]);
    ids[groups[w]].push_back(w);
  }
  for (std::uint32_t g = 0; g < saved_.size(); ++g)
    try {
      check_fits(syncer_config_of(c, algo_.settings, g, members[g], st.shards),
                 *saved_[g], shadow_syncer_file(g));
    } catch (const std::exception& e) {
      actors::detail::placement_failed(
          self, "cannot resume from " + resumed_from_ + ": " + e.what());
      return;
    }
  syncers_.resize(count);
  std::vector<caf::actor> shards;
  for (auto& s : st.shards)
    shards.push_back(caf::actor_cast<caf::actor>(s.handle));
  auto pending = std::make_shared<std::size_t>(0);
  for (std::uint32_t g = 0; g < count; ++g) {
    std::vector<caf::actor> handles;
    int node = -1;
    for (auto w : ids[g]) {
      handles.push_back(caf::actor_cast<caf::actor>(st.workers[w]));
      if (node < 0 && w < c.placement.worker_node.size())
        node = c.placement.worker_node[w];
    }
    const std::string* state = g < states_.size() ? &states_[g] : nullptr;
    if (node < 0) {
      auto sc = syncer_config_of(c, algo_.settings, g, std::move(members[g]),
                                 st.shards);
      sc.ids = std::move(ids[g]);
      sc.owner = self->node();
      if (g < saved_.size())
        sc.state = saved_[g];
      syncers_[g] = self->spawn(shadow_syncer, std::move(sc));
      continue;
    }
    ++*pending;
    auto agent = c.placement.nodes.at(static_cast<std::size_t>(node));
    auto role = std::string{state ? "resumed_shadow_syncer" : "shadow_syncer"};
    auto args = state ? caf::make_message(g, handles, shards, *state)
                      : caf::make_message(g, handles, shards);
    self->request(agent, c.request_timeout, spawn_atom::value, role,
                  std::move(args))
        .then(
            [this, self, g, pending, ready](caf::actor& h) {
              syncers_[g] = caf::actor_cast<shadow_syncer_actor>(h);
              if (--*pending == 0)
                syncers_ready(self, ready);
            },
            [self, g](caf::error& err) {
              actors::detail::placement_failed(
                  self, "a node could not start shadow syncer "
                            + std::to_string(g) + ": "
                            + self->system().render(err));
            });
  }
  if (*pending == 0)
    syncers_ready(self, ready);
}

bool shadow_run::on_down(coordinator_ptr self, const caf::down_msg& msg) {
  for (std::uint32_t g = 0; g < syncers_.size(); ++g)
    if (syncers_[g] && syncers_[g].address() == msg.source) {
      actors::detail::log().error("shadow syncer {} was lost: {}", g,
                                  self->system().render(msg.reason));
      syncers_[g] = nullptr; // the end of the job does not ask it
      for (auto& other : syncers_)
        if (other)
          self->send(other, leave_atom::value, g);
      return true;
    }
  return false;
}

void shadow_run::finish(coordinator_ptr self, std::function<void()> done) {
  // Each syncer's statistics (a lost one is left out).
  std::vector<shadow_syncer_actor> live;
  for (auto& s : syncers_)
    if (s)
      live.push_back(s);
  auto remaining = std::make_shared<std::size_t>(live.size());
  if (*remaining == 0) {
    done();
    return;
  }
  auto timeout = self->state.config.request_timeout;
  for (auto& s : live)
    self->request(s, timeout, stats_atom::value)
        .then(
            [this, remaining, done](std::string& text) {
              auto j = nlohmann::json::parse(text, nullptr, false);
              if (!j.is_discarded())
                reports_.push_back(std::move(j));
              if (--*remaining == 0)
                done();
            },
            [self, remaining, done](caf::error& err) {
              actors::detail::log().warn("a shadow syncer did not report: {}",
                                         self->system().render(err));
              if (--*remaining == 0)
                done();
            });
}

void shadow_run::stop(coordinator_ptr self) {
  for (auto& s : syncers_)
    if (s && s.node() == self->node())
      self->send_exit(s, caf::exit_reason::user_shutdown);
}

void shadow_run::shard_restored(coordinator_ptr self, std::size_t i,
                                const caf::actor& h) {
  for (auto& s : syncers_)
    if (s)
      self->send(s, rebind_atom::value, static_cast<std::uint32_t>(i), h);
}

bool shadow_run::pushes_sent(
    std::map<messages::worker_id, std::uint64_t>& sent) const {
  // A lost syncer's pushes are not known.
  if (reports_.size() != syncers_.size())
    return false;
  for (const auto& r : reports_)
    sent[shadow_syncer_ids + r.value("syncer", std::uint32_t{0})]
        = r.value("pushes", std::uint64_t{0});
  return true;
}

void shadow_run::report(const coordinator_state& st, nlohmann::json& out,
                        std::uint64_t& messages, std::uint64_t& bytes) const {
  std::uint64_t rounds = 0;
  double gap_sum = 0;
  for (auto& r : reports_) {
    messages += r.value("messages", std::uint64_t{0});
    bytes += r.value("bytes", std::uint64_t{0});
    rounds += r.value("rounds", std::uint64_t{0});
    gap_sum += r.value("sync_gap", 0.0);
  }
  const auto& o = algo_.settings;
  nlohmann::json j{
      {"mode", o.mode},
      {"syncers", reports_},
      {"rounds", rounds},
      {"sync_gap",
       reports_.empty() ? 0.0 : gap_sum / static_cast<double>(reports_.size())},
      {"period_ms", o.period.count()},
      {"optimizer", algo_.local.optimizer.name},
      {"lr", algo_.local.lr}};
  if (o.mode == "easgd")
    j["alpha"] = shadow_alpha(o, st.config.workers);
  if (o.mode == "bmuf") {
    j["block_momentum"] = shadow_block_momentum(o, st.config.workers);
    j["block_lr"] = o.block_lr;
  }
  out["shadow"] = std::move(j);
}

namespace {

/// The live syncers with their indices.
std::vector<std::pair<std::uint32_t, shadow_syncer_actor>>
live(const std::vector<shadow_syncer_actor>& syncers) {
  std::vector<std::pair<std::uint32_t, shadow_syncer_actor>> out;
  for (std::uint32_t g = 0; g < syncers.size(); ++g)
    if (syncers[g])
      out.emplace_back(g, syncers[g]);
  return out;
}

/// Answers of several syncers, settled once all came.
struct gather {
  std::size_t left = 0;
  std::uint64_t latest = 0;
  std::string error;
};

} // namespace

void shadow_run::quiesce(coordinator_ptr self,
                         std::function<void(std::string)> done) {
  auto syncers = live(syncers_);
  if (syncers.empty())
    return done({});
  auto timeout = self->state.config.request_timeout;
  // A drain may run a round (its snapshots, its exchange: a timeout each)
  // and flush: a few timeouts.
  auto drain_timeout = timeout;
  drain_timeout.count *= 5;
  auto p = std::make_shared<gather>();
  p->left = syncers.size();
  auto drain = [self, syncers, p, done, drain_timeout] {
    if (!p->error.empty())
      return done(p->error);
    p->left = syncers.size();
    for (auto& [g, s] : syncers)
      self->request(s, drain_timeout, pause_atom::value, p->latest)
          .then(
              [p, done](ack_atom) {
                if (--p->left == 0)
                  done(p->error);
              },
              [self, p, done, g = g](caf::error& err) {
                if (p->error.empty())
                  p->error = "shadow syncer " + std::to_string(g)
                             + " did not end its rounds: "
                             + self->system().render(err);
                if (--p->left == 0)
                  done(p->error);
              });
  };
  for (auto& [g, s] : syncers)
    self->request(s, timeout, pause_atom::value)
        .then(
            [p, drain](std::uint64_t round) {
              p->latest = std::max(p->latest, round);
              if (--p->left == 0)
                drain();
            },
            [self, p, drain, g = g](caf::error& err) {
              if (p->error.empty())
                p->error = "shadow syncer " + std::to_string(g)
                           + " did not pause: " + self->system().render(err);
              if (--p->left == 0)
                drain();
            });
}

void shadow_run::save(coordinator_ptr self,
                      std::function<void(state_files, std::string)> done) {
  std::vector<saved_role> roles;
  for (std::uint32_t g = 0; g < syncers_.size(); ++g) {
    if (!syncers_[g])
      return done({}, "shadow syncer " + std::to_string(g) + " was lost");
    roles.push_back({caf::actor_cast<caf::actor>(syncers_[g]),
                     shadow_syncer_file(g),
                     "shadow syncer " + std::to_string(g)});
  }
  save_roles(self, std::move(roles), std::move(done));
}

void shadow_run::resume(coordinator_ptr self) {
  for (auto& s : syncers_)
    if (s)
      self->send(s, resume_atom::value);
}

void shadow_run::restore(const resume_point& from) {
  resumed_from_ = from.path;
  states_.clear();
  saved_.clear();
  for (std::uint32_t g = 0; from.files.count(shadow_syncer_file(g)); ++g) {
    auto file = shadow_syncer_file(g);
    const auto& bytes = from.files.at(file);
    auto s = decode_shadow_syncer(bytes, file);
    if (s.index != g)
      throw optim::data_error(file + ": the state of syncer "
                              + std::to_string(s.index));
    states_.push_back(bytes);
    saved_.push_back(std::make_shared<const shadow_syncer_saved>(std::move(s)));
  }
  if (states_.empty())
    throw optim::data_error(from.path + ": no " + shadow_syncer_file(0));
}

} // namespace troupe::algos
