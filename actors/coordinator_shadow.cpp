// ShadowSync's syncers: one per group of workers (one per node when the job
// is placed), spawned on the node of their workers, before the start.

#include <memory>

#include <caf/actor_cast.hpp>

#include "actors/detail/coordinator_ops.hpp"
#include "actors/detail/log.hpp"
#include "actors/roles.hpp"

namespace troupe::actors::detail {

using namespace messages;

namespace {

/// Every syncer exists: they get each other's handles (and start their
/// rounds), then the job begins.
void syncers_ready(coordinator_ptr self) {
  auto& st = self->state;
  std::vector<caf::actor> handles;
  for (auto& s : st.syncers)
    handles.push_back(caf::actor_cast<caf::actor>(s));
  for (auto& s : st.syncers) {
    self->send(s, peers_atom::value, handles);
    self->monitor(s); // a lost syncer is no longer awaited by the others
  }
  begin(self);
}

} // namespace

void provision_syncers(coordinator_ptr self) {
  auto& st = self->state;
  auto& c = st.config;
  if (c.algo != "shadow") {
    begin(self);
    return;
  }
  auto groups = worker_groups(c);
  std::uint32_t count = 0;
  for (auto g : groups)
    count = std::max(count, g + 1);
  st.syncers.resize(count);
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
      auto sc = syncer_config_of(c, g, std::move(members), st.shards);
      sc.ids = std::move(ids);
      st.syncers[g] = self->spawn(shadow_syncer, std::move(sc));
      continue;
    }
    ++*pending;
    auto agent = c.placement.nodes.at(static_cast<std::size_t>(node));
    self->request(agent, c.request_timeout, spawn_atom::value,
                  std::string{"shadow_syncer"},
                  caf::make_message(g, handles, shards))
        .then(
            [self, g, pending](caf::actor& h) {
              self->state.syncers[g] = caf::actor_cast<shadow_syncer_actor>(h);
              if (--*pending == 0)
                syncers_ready(self);
            },
            [self, g](caf::error& err) {
              placement_failed(self, "a node could not start shadow syncer "
                                         + std::to_string(g) + ": "
                                         + self->system().render(err));
            });
  }
  if (*pending == 0)
    syncers_ready(self);
}

} // namespace troupe::actors::detail
