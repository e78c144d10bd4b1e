// Hot shard replicas (--shard-replicas=1, issue [11]): each shard gets a
// backup on another node, attached to its primary (which sends it its
// state, then every push it receives, in order: detail/shard_replica.hpp).
// When the primary's node is lost the backup takes over at once: the
// workers and the evaluator get its handle, the workers send their recent
// pushes again (those the backup has are duplicates), and training goes on
// with no update lost. A new backup is then attached to the new primary
// (on a node neither its own nor lost, else in the coordinator's process).

#include <algorithm>
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

/// What failed: at the start the job ends (placement_failed), after a
/// takeover the shard goes on without a backup.
using on_fail = std::function<void(const std::string&)>;

/// Attaches backup `b` of shard i to its primary; `one` once it holds the
/// primary's state.
void attach(coordinator_ptr self, std::size_t i, caf::actor b,
            std::function<void()> one, on_fail failed) {
  auto& st = self->state;
  auto primary = st.shards[i].handle;
  st.attaching.push_back(b);
  auto attached = [self, b] {
    auto& v = self->state.attaching;
    auto it = std::find(v.begin(), v.end(), b);
    if (it == v.end())
      return false; // the job ended and stopped it
    v.erase(it);
    return true;
  };
  self->request(primary, st.config.request_timeout, replicate_atom::value, b)
      .then(
          [self, i, b, one, primary, attached](bool) {
            auto& st = self->state;
            if (!attached() || st.shards[i].handle != primary || st.result) {
              // Its primary was lost meanwhile, or the job has ended.
              self->send_exit(b, caf::exit_reason::user_shutdown);
              one();
              return;
            }
            // Kept even while the job ends: the primary forwards to it and
            // asks it for its figures, and the end stops it (deliver).
            // The answer comes behind every push the primary forwarded
            // before it, so a fast job may end first.
            st.backups[i] = caf::actor_cast<parameter_shard_actor>(b);
            self->monitor(b);
            log().info("shard {}: hot backup on {} in step with its primary "
                       "on {}{}",
                       i, backup_node_name(st, i), shard_node_name(st, i),
                       st.finishing ? " (as the job ends)" : "");
            one();
          },
          [self, i, b, failed, attached](caf::error& err) {
            if (attached())
              self->send_exit(b, caf::exit_reason::user_shutdown);
            failed("shard " + std::to_string(i)
                   + " could not attach its backup on "
                   + backup_node_name(self->state, i) + ": "
                   + self->system().render(err));
          });
}

/// Spawns shard i's backup where the plan says (here or on a node), then
/// attaches it.
void spawn_backup(coordinator_ptr self, std::uint32_t i,
                  std::function<void()> one, on_fail failed) {
  auto& st = self->state;
  auto& c = st.config;
  auto primary = caf::actor_cast<caf::actor>(st.shards[i].handle);
  auto n = c.placement.backup_at(i);
  if (n < 0) {
    auto sc = shard_config(c, i);
    sc.state = nullptr; // the primary sends its own
    sc.primary = primary.address();
    attach(self, i,
           caf::actor_cast<caf::actor>(self->spawn(parameter_shard, sc)), one,
           failed);
    return;
  }
  auto node = c.placement.nodes.at(static_cast<std::size_t>(n));
  self->request(node, c.request_timeout, spawn_atom::value,
                std::string{"shard_backup"}, caf::make_message(i, primary))
      .then([self, i, one,
             failed](caf::actor& b) { attach(self, i, b, one, failed); },
            [self, i, failed](caf::error& err) {
              failed("node " + backup_node_name(self->state, i)
                     + " could not start the backup of shard "
                     + std::to_string(i) + ": " + self->system().render(err));
            });
}

/// After a takeover: a new backup for shard i, on a node neither its new
/// primary's nor lost (`lost`, or named by a failure), else here; none if
/// the primary runs here and no such node is left.
void re_replicate(coordinator_ptr self, std::size_t i,
                  const std::string& lost) {
  auto& st = self->state;
  auto& plan = st.config.placement;
  auto gone = [&](std::int32_t n) {
    auto name = plan.name_of(n, "local");
    if (name == lost)
      return true;
    for (const auto& f : st.failures)
      if (f.node == name)
        return true;
    return false;
  };
  std::int32_t where = -1;
  if (plan.shard_at(i) < 0) {
    where = -2;
    for (std::int32_t n = 0; n < static_cast<std::int32_t>(plan.nodes.size());
         ++n)
      if (!gone(n)) {
        where = n;
        break;
      }
  }
  if (where == -2) {
    log().warn("shard {}: no node left for a new backup; it goes on without "
               "one",
               i);
    return;
  }
  plan.backup_node.resize(std::max(plan.backup_node.size(), i + 1), -1);
  plan.backup_node[i] = where;
  spawn_backup(
      self, static_cast<std::uint32_t>(i), [] {},
      [](const std::string& why) {
        log().warn("{}; the shard goes on without a backup", why);
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
  for (std::uint32_t i = 0; i < st.shards.size(); ++i)
    spawn_backup(self, i, one, [self](const std::string& why) {
      placement_failed(self, why);
    });
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
  r.seconds = seconds_since(self, st.t0);
  st.restored.push_back(r);
  rebind(self, i, caf::actor_cast<caf::actor>(h));
  log().warn("shard {} (lost with {}): its hot backup on {} took over at "
             "step {}",
             i, node, r.to, r.steps_at_loss);
  re_replicate(self, i, node);
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

nlohmann::json replicas_report(const coordinator_state& st) {
  auto out = nlohmann::json::array();
  for (std::size_t i = 0; i < st.shards.size(); ++i) {
    nlohmann::json j{{"shard", i}, {"primary", shard_node_name(st, i)}};
    const shard_stats* p = nullptr;
    for (const auto& x : st.shard_reports)
      if (x.shard == i)
        p = &x;
    bool took_over = false;
    for (const auto& r : st.restored)
      took_over |= r.index == i && r.from == "replica";
    j["took_over"] = took_over;
    if (st.backups.size() > i && st.backups[i]) {
      j["backup"] = backup_node_name(st, i);
      j["state"] = "in step";
      // Forwarded pushes, in the primary's order: the same parameters.
      j["same_parameters"] = p && !p->backup_hash.empty()
                             && p->params_hash == p->backup_hash
                             && p->version == p->backup_version;
      if (p && !p->backup_hash.empty())
        j["backup_version"] = p->backup_version;
    } else {
      j["backup"] = nullptr;
      j["state"] = "none";
    }
    if (p)
      j["version"] = p->version;
    out.push_back(std::move(j));
  }
  return out;
}

} // namespace troupe::actors::detail
