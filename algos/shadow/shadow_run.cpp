#include "algos/shadow/shadow_run.hpp"

#include <algorithm>
#include <memory>

#include <caf/actor_cast.hpp>

#include "actors/coordinator.hpp"
#include "actors/detail/coordinator_ops.hpp"
#include "actors/detail/log.hpp"
#include "actors/roles.hpp"
#include "algos/shadow/shadow.hpp"

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
  syncers_.resize(count);
  std::vector<caf::actor> shards;
  for (auto& s : st.shards)
    shards.push_back(caf::actor_cast<caf::actor>(s.handle));
  auto pending = std::make_shared<std::size_t>(0);
  for (std::uint32_t g = 0; g < count; ++g) {
    std::vector<worker_actor> members;
    std::vector<caf::actor> handles;
    std::vector<worker_id> ids;
    int node = -1;
    for (std::uint32_t w = 0; w < c.workers; ++w)
      if (groups[w] == g) {
        ids.push_back(w);
        members.push_back(st.workers[w]);
        handles.push_back(caf::actor_cast<caf::actor>(st.workers[w]));
        if (node < 0 && w < c.placement.worker_node.size())
          node = c.placement.worker_node[w];
      }
    if (node < 0) {
      auto sc = syncer_config_of(c, algo_.settings, g, std::move(members),
                                 st.shards);
      sc.ids = std::move(ids);
      syncers_[g] = self->spawn(shadow_syncer, std::move(sc));
      continue;
    }
    ++*pending;
    auto agent = c.placement.nodes.at(static_cast<std::size_t>(node));
    self->request(agent, c.request_timeout, spawn_atom::value,
                  std::string{"shadow_syncer"},
                  caf::make_message(g, handles, shards))
        .then(
            [this, self, g, pending, ready](caf::actor& h) {
              syncers_[g] = caf::actor_cast<shadow_syncer_actor>(h);
              if (--*pending == 0)
                syncers_ready(self, ready);
            },
            [self, g](caf::error& err) {
              detail::placement_failed(self,
                                       "a node could not start shadow syncer "
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
      detail::log().error("shadow syncer {} was lost: {}", g,
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
              detail::log().warn("a shadow syncer did not report: {}",
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

} // namespace troupe::algos
