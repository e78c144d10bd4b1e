// The coordinator's roles: spawned here or placed on nodes (their loss is
// in coordinator_loss.cpp).

#include <algorithm>
#include <memory>

#include <caf/actor_cast.hpp>

#include "actors/detail/coordinator_ops.hpp"
#include "actors/detail/log.hpp"
#include "actors/roles.hpp"

namespace troupe::actors {

using namespace messages;

std::string worker_node_name(const coordinator_state& st, std::size_t w) {
  const auto& plan = st.config.placement;
  return plan.name_of(plan.worker_at(w), "local");
}

std::string shard_node_name(const coordinator_state& st, std::size_t i) {
  const auto& plan = st.config.placement;
  return plan.name_of(plan.shard_at(i), "local");
}

namespace detail {

/// Placement failed (a node refused or did not answer): the job ends before
/// it started, with the reason.
void placement_failed(coordinator_ptr self, const std::string& what) {
  auto& st = self->state;
  if (st.result)
    return;
  st.error = what;
  st.stop_reason = "placement failed";
  st.finishing = true;
  log().error("{}", what);
  for (auto& w : st.workers)
    if (w)
      self->send_exit(w, caf::exit_reason::user_shutdown);
  deliver(self, job_report(st, nullptr).dump());
}

namespace {

/// A resumed job's checkpoint file `name` (sent to the node that hosts the
/// role), or none.
const std::string* resumed_state(const job_config& c, const std::string& name) {
  if (!c.resume)
    return nullptr;
  auto it = c.resume->files.find(name);
  return it == c.resume->files.end() ? nullptr : &it->second;
}

/// The algorithm's own roles, then the start.
void provision_run(coordinator_ptr self) {
  self->state.run->provision(self, [self] { begin(self); });
}

void provision_workers(coordinator_ptr self) {
  auto& st = self->state;
  auto& c = st.config;
  coordinator_actor me = self;
  std::vector<caf::actor> handles;
  for (auto& s : st.shards)
    handles.push_back(caf::actor_cast<caf::actor>(s.handle));
  auto pending = std::make_shared<std::size_t>(0);
  for (std::uint32_t w = 0; w < c.workers; ++w) {
    auto n = c.placement.worker_at(w);
    if (n < 0) {
      st.workers[w]
          = spawn_worker(self, c, worker_config_of(c, w, st.shards, me));
      continue;
    }
    ++*pending;
    auto node = c.placement.nodes.at(static_cast<std::size_t>(n));
    auto state = resumed_state(c, "worker-" + std::to_string(w) + ".state");
    auto args = state ? caf::make_message(
                    w, handles, caf::actor_cast<caf::actor>(self), *state)
                      : caf::make_message(w, handles,
                                          caf::actor_cast<caf::actor>(self));
    self->request(node, c.request_timeout, spawn_atom::value,
                  std::string{state ? "resumed_worker" : "worker"},
                  std::move(args))
        .then(
            [self, w, pending](caf::actor& h) {
              self->state.workers[w] = caf::actor_cast<worker_actor>(h);
              if (--*pending == 0)
                provision_run(self);
            },
            [self, w](caf::error& err) {
              placement_failed(self, "node " + worker_node_name(self->state, w)
                                         + " could not start worker "
                                         + std::to_string(w) + ": "
                                         + self->system().render(err));
            });
  }
  if (*pending == 0)
    provision_run(self);
}

/// The shards exist: their hot backups (if any), then the workers.
void shards_ready(coordinator_ptr self) {
  provision_backups(self, [self] { provision_workers(self); });
}

} // namespace

void spawn_evaluator(coordinator_ptr self) {
  auto& st = self->state;
  auto& c = st.config;
  evaluator_config ec;
  ec.shards = st.shards;
  if (auto source = st.run->evaluation_source())
    ec.source = std::move(source); // e.g. LSGD's leader board
  else if (c.shards == 0)
    // No shards (SGP, DS-Sync, ...): the mean of the (honest) workers'
    // models.
    for (std::size_t w = 0; w < st.workers.size(); ++w)
      if (std::find(c.byzantine.begin(), c.byzantine.end(), w)
          == c.byzantine.end())
        ec.average.push_back(caf::actor_cast<caf::actor>(st.workers[w]));
  ec.parameters = c.init->size();
  ec.evaluate = c.evaluate;
  ec.request_timeout = c.request_timeout;
  ec.last_params = c.final_params;
  st.eval = self->spawn(evaluator, std::move(ec));
}

void provision(coordinator_ptr self) {
  auto& st = self->state;
  auto& c = st.config;
  auto ranges = shard_ranges(c);
  st.shards.resize(c.shards);
  st.shard_lost.assign(c.shards, false);
  st.workers.resize(c.workers);
  st.started.assign(c.workers, false);
  st.live.assign(c.workers, true);
  st.gone.assign(c.workers, false);
  st.quota.assign(c.workers, c.steps_per_worker);
  st.worker_steps.assign(c.workers, 0);
  auto pending = std::make_shared<std::size_t>(0);
  for (std::uint32_t i = 0; i < c.shards; ++i) {
    st.shards[i].range = ranges[i];
    auto n = c.placement.shard_at(i);
    if (n < 0) {
      st.shards[i].handle = self->spawn(parameter_shard, shard_config(c, i));
      continue;
    }
    ++*pending;
    auto node = c.placement.nodes.at(static_cast<std::size_t>(n));
    auto state = resumed_state(c, "shard-" + std::to_string(i) + ".state");
    self->request(node, c.request_timeout, spawn_atom::value,
                  std::string{state ? "resumed_shard" : "shard"},
                  state ? caf::make_message(i, *state) : caf::make_message(i))
        .then(
            [self, i, pending](caf::actor& h) {
              self->state.shards[i].handle
                  = caf::actor_cast<parameter_shard_actor>(h);
              if (--*pending == 0)
                shards_ready(self);
            },
            [self, i](caf::error& err) {
              placement_failed(self, "node " + shard_node_name(self->state, i)
                                         + " could not start shard "
                                         + std::to_string(i) + ": "
                                         + self->system().render(err));
            });
  }
  if (*pending == 0)
    shards_ready(self);
}

bool all_workers_done(const coordinator_state& st) {
  return std::none_of(st.live.begin(), st.live.end(), [](bool l) { return l; });
}

} // namespace detail

} // namespace troupe::actors
