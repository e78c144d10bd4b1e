// Hot shard replicas (--shard-replicas=1, issue [11]): each shard gets a
// backup on another node, attached to its primary (which sends it its
// state, then every push it receives, in order: detail/shard_replica.hpp).
// When the primary's node is lost the backup takes over at once: the
// workers and the evaluator get its handle, the workers send their recent
// pushes again (those the backup has are duplicates), and training goes on
// with no update lost. The shard then runs without a backup.

#include <memory>

#include <caf/actor_cast.hpp>

#include "actors/detail/coordinator_ops.hpp"
#include "actors/detail/log.hpp"
#include "actors/roles.hpp"

namespace troupe::actors::detail {

using namespace messages;

namespace {

std::string backup_node_name(const coordinator_state& st, std::size_t i) {
  const auto& plan = st.config.placement;
  return plan.name_of(plan.backup_at(i), "local");
}

/// Attaches backup `b` of shard i to its primary; `one` once it holds the
/// primary's state.
void attach(coordinator_ptr self, std::size_t i, caf::actor b,
            std::function<void()> one) {
  auto& st = self->state;
  self->request(st.shards[i].handle, st.config.request_timeout,
                replicate_atom::value, b)
      .then(
          [self, i, b, one](bool) {
            auto& st = self->state;
            st.backups[i] = caf::actor_cast<parameter_shard_actor>(b);
            self->monitor(b);
            log().info("shard {}: hot backup on {} in step with its primary "
                       "on {}",
                       i, backup_node_name(st, i), shard_node_name(st, i));
            one();
          },
          [self, i](caf::error& err) {
            placement_failed(self, "shard " + std::to_string(i)
                                       + " could not attach its backup on "
                                       + backup_node_name(self->state, i) + ": "
                                       + self->system().render(err));
          });
}

} // namespace

void provision_backups(coordinator_ptr self, std::function<void()> then) {
  auto& st = self->state;
  auto& c = st.config;
  st.backups.assign(st.shards.size(), parameter_shard_actor{});
  if (c.shard_replicas == 0 || st.shards.empty()) {
    then();
    return;
  }
  auto pending = std::make_shared<std::size_t>(st.shards.size());
  auto one = [pending, then] {
    if (--*pending == 0)
      then();
  };
  for (std::uint32_t i = 0; i < st.shards.size(); ++i) {
    auto primary = caf::actor_cast<caf::actor>(st.shards[i].handle);
    auto n = c.placement.backup_at(i);
    if (n < 0) {
      auto sc = shard_config(c, i);
      sc.state = nullptr; // the primary sends its own
      sc.primary = primary.address();
      attach(self, i,
             caf::actor_cast<caf::actor>(self->spawn(parameter_shard, sc)),
             one);
      continue;
    }
    auto node = c.placement.nodes.at(static_cast<std::size_t>(n));
    self->request(node, c.request_timeout, spawn_atom::value,
                  std::string{"shard_backup"}, caf::make_message(i, primary))
        .then([self, i, one](caf::actor& b) { attach(self, i, b, one); },
              [self, i](caf::error& err) {
                placement_failed(self, "node "
                                           + backup_node_name(self->state, i)
                                           + " could not start the backup of "
                                             "shard "
                                           + std::to_string(i) + ": "
                                           + self->system().render(err));
              });
  }
}

bool fail_over(coordinator_ptr self, std::size_t i, const std::string& node) {
  auto& st = self->state;
  if (st.finishing || i >= st.backups.size() || !st.backups[i])
    return false;
  auto h = st.backups[i];
  st.backups[i] = parameter_shard_actor{};
  st.shards[i].handle = h;
  st.shard_lost[i] = false;
  auto& where = st.config.placement.shard_node;
  if (i < where.size())
    where[i] = st.config.placement.backup_at(i);
  restored_shard r;
  r.index = static_cast<std::uint32_t>(i);
  r.node = node;
  r.from = "replica";
  r.to = shard_node_name(st, i);
  r.steps_at_loss = st.total_steps;
  r.seconds = seconds_since(st.t0);
  st.restored.push_back(r);
  rebind(self, i, caf::actor_cast<caf::actor>(h));
  log().warn("shard {} (lost with {}): its hot backup on {} took over at "
             "step {}",
             i, node, r.to, r.steps_at_loss);
  return true;
}

bool backup_down(coordinator_ptr self, const caf::actor_addr& source,
                 std::size_t& index) {
  auto& st = self->state;
  for (std::size_t i = 0; i < st.backups.size(); ++i)
    if (st.backups[i] && st.backups[i].address() == source) {
      st.backups[i] = parameter_shard_actor{};
      index = i;
      // The primary stops forwarding to it.
      self->request(st.shards[i].handle, st.config.request_timeout,
                    replicate_atom::value, caf::actor{})
          .then([](bool) {}, [](caf::error&) {});
      return true;
    }
  return false;
}

std::string backup_node_of(const coordinator_state& st, std::size_t i) {
  return backup_node_name(st, i);
}

void collect_backup_stats(coordinator_ptr self, std::function<void()> then) {
  auto& st = self->state;
  auto pending = std::make_shared<std::size_t>(0);
  for (auto& b : st.backups)
    if (b)
      ++*pending;
  if (*pending == 0) {
    then();
    return;
  }
  auto one = [pending, then] {
    if (--*pending == 0)
      then();
  };
  for (auto& b : st.backups)
    if (b)
      self->request(b, st.config.request_timeout, stats_atom::value)
          .then(
              [self, one](shard_stats& x) {
                self->state.backup_reports.push_back(std::move(x));
                one();
              },
              [self, one](caf::error& err) {
                log().warn("a shard's backup did not report: {}",
                           self->system().render(err));
                one();
              });
}

nlohmann::json replicas_report(const coordinator_state& st) {
  auto out = nlohmann::json::array();
  for (std::size_t i = 0; i < st.shards.size(); ++i) {
    nlohmann::json j{{"shard", i}, {"primary", shard_node_name(st, i)}};
    const shard_stats *p = nullptr, *b = nullptr;
    for (const auto& x : st.shard_reports)
      if (x.shard == i)
        p = &x;
    for (const auto& x : st.backup_reports)
      if (x.shard == i)
        b = &x;
    bool took_over = false;
    for (const auto& r : st.restored)
      took_over |= r.index == i && r.from == "replica";
    if (b) {
      j["backup"] = backup_node_name(st, i);
      j["state"] = "in step";
      j["backup_version"] = b->version;
      // Forwarded pushes, in the primary's order: the same parameters.
      j["same_parameters"]
          = p && p->params_hash == b->params_hash && p->version == b->version;
    } else {
      j["backup"] = nullptr;
      j["state"] = took_over ? "took over" : "lost";
    }
    if (p)
      j["version"] = p->version;
    out.push_back(std::move(j));
  }
  return out;
}

} // namespace troupe::actors::detail
