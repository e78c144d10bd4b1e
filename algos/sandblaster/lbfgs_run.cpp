// Sandblaster's roles and ends: placing the shards and workers (here or on
// the nodes), losing them, collecting the result, and running a job.

#include <algorithm>
#include <stdexcept>

#include <caf/all.hpp>

#include "actors/detail/log.hpp"
#include "algos/sandblaster/detail/lbfgs_driver.hpp"
#include "algos/sandblaster/detail/lbfgs_worker.hpp"
#include "messages/registry.hpp"

namespace troupe::algos {

using namespace messages;

namespace detail {

double elapsed(lbfgs_driver_ptr self) {
  return actors::seconds_since(self, self->state.started);
}

/// The iteration to the probe's gauges and the observers (a step of the
/// driver whose loss is the objective).
void report_iteration(lbfgs_driver_ptr self, double seconds) {
  auto& st = self->state;
  if (st.probe) {
    st.probe->gauge("iteration", static_cast<double>(st.iterations));
    st.probe->gauge("passes", static_cast<double>(st.pass));
    st.probe->gauge("objective", st.fx);
    st.probe->gauge("gradient_norm", st.gnorm);
    st.probe->gauge("backups", static_cast<double>(st.backups));
    st.probe->gauge("lost_workers", static_cast<double>(st.lost));
  }
  actors::step_event ev;
  ev.steps = st.iterations;
  ev.samples = st.evaluated - st.reported;
  st.reported = st.evaluated;
  ev.loss = st.fx;
  ev.seconds = seconds;
  for (auto& o : st.job->observers)
    o->on_step(ev);
}

namespace {

nlohmann::json summary(lbfgs_driver_ptr self, const std::string& reason,
                       const std::optional<std::string>& error) {
  const auto& st = self->state;
  nlohmann::json out{{"stop_reason", reason},
                     {"iterations", st.iterations},
                     {"passes", st.pass},
                     {"f", st.fx},
                     {"gradient_norm", st.gnorm},
                     {"seconds", elapsed(self)},
                     {"samples", st.evaluated},
                     {"portions_counted", st.counted},
                     {"duplicates_discarded", st.duplicates},
                     {"backups", st.backups},
                     {"reissued", st.reissued},
                     {"lost_workers", st.lost},
                     {"pairs_rejected", st.rejected},
                     {"results_by_worker", st.results},
                     {"trace", st.trace}};
  if (error)
    out["error"] = *error;
  if (!st.checkpoint_log.empty())
    out["checkpoints"] = st.checkpoint_log;
  if (!st.restored.empty())
    out["restored_shards"] = st.restored;
  if (st.job->resume)
    out["resumed_from"]
        = {{"path", st.job->resume->path},
           {"steps",
            st.job->resume->progress.value("total_steps", std::uint64_t{0})}};
  return out;
}

/// Stops the roles: the nodes' agents stop theirs (told why), the driver
/// its own (an exit sent to a node's role would end its agent first,
/// without the reason).
void stop_roles(lbfgs_driver_ptr self) {
  auto& st = self->state;
  if (st.probe)
    st.probe->activity("done");
  for (auto& n : st.where.nodes)
    self->send(n, stop_atom::value, std::string{"lbfgs: the job is over"});
  for (std::size_t w = 0; w < st.workers.size(); ++w)
    if (st.workers[w] && st.where.worker_at(w) < 0)
      self->send_exit(st.workers[w], caf::exit_reason::user_shutdown);
  for (std::size_t k = 0; k < st.shards.size(); ++k)
    if (st.shards[k] && st.where.shard_at(k) < 0)
      self->send_exit(st.shards[k], caf::exit_reason::user_shutdown);
  self->quit();
}

/// Replies the final JSON, tells the observers, stops the roles.
void deliver(lbfgs_driver_ptr self, const nlohmann::json& out) {
  auto& st = self->state;
  auto text = out.dump();
  for (auto& o : st.job->observers)
    o->on_finish(text);
  if (st.result.pending())
    st.result.deliver(std::move(text));
  stop_roles(self);
}

/// The nodes' actor metrics (this process's and the placed nodes'), polled
/// into the job's view until the driver ends, as the coordinator does.
void start_monitoring(lbfgs_driver_ptr self) {
  auto& st = self->state;
  if (!st.job->monitor)
    return;
  spawn_cluster_monitoring(self, st.job->monitor, st.job->node_name,
                           st.where.nodes, st.where.node_names,
                           st.job->monitor_interval);
}

/// "node host:pid" or "this process", for messages.
std::string where_name(const actors::placement_plan& where, std::int32_t n) {
  return n < 0 ? "this process" : "node " + where.name_of(n, "");
}

} // namespace

void finish(lbfgs_driver_ptr self, const std::string& reason,
            std::optional<std::string> error, bool collect) {
  auto& st = self->state;
  if (st.finished)
    return;
  st.finished = true;
  st.table.reset(); // nothing more is handed out
  actors::detail::log().info(
      "lbfgs: {} after {} iterations and {} passes (f = {})", reason,
      st.iterations, st.pass, st.fx);
  if (!collect || st.shards.empty()) {
    deliver(self, summary(self, reason, error));
    return;
  }
  auto x = std::make_shared<std::vector<double>>(st.job->init->size(), 0.0);
  auto left = std::make_shared<std::size_t>(st.shards.size());
  auto complete = [self, x, reason, error] {
    auto out = summary(self, reason, error);
    out["x"] = *x;
    deliver(self, out);
  };
  for (std::size_t k = 0; k < st.shards.size(); ++k)
    self->request(st.shards[k], st.job->request_timeout, result_atom::value)
        .then(
            [self, k, x, left, complete](const lbfgs_point_msg& point) {
              auto v = unpack_doubles(point.values);
              std::copy(v.begin(), v.end(),
                        x->begin()
                            + static_cast<std::ptrdiff_t>(
                                self->state.ranges[k].offset));
              if (--*left == 0)
                complete();
            },
            [self, reason, error](caf::error& e) {
              auto what = "lbfgs: cannot collect the parameters: "
                          + self->system().render(e);
              deliver(self, summary(self, reason, error ? *error : what));
            });
}

void role_down(lbfgs_driver_ptr self, const caf::down_msg& msg) {
  auto& st = self->state;
  if (st.finished)
    return;
  for (std::size_t k = 0; k < st.shards.size(); ++k)
    if (st.shards[k].address() == msg.source) {
      auto node = where_name(st.where, st.where.shard_at(k));
      auto reason = self->system().render(msg.reason);
      if (roll_back(self, k, node, reason))
        return;
      auto what = "lbfgs: shard " + std::to_string(k) + " (" + node
                  + ") was lost: " + reason
                  + (st.job->checkpoints.write
                         ? " before the first checkpoint"
                         : " (with --checkpoint-dir it is restored)");
      actors::detail::log().error("{}", what);
      finish(self, "failed", what, false);
      return;
    }
  for (std::size_t w = 0; w < st.workers.size(); ++w)
    if (st.live[w] && st.workers[w].address() == msg.source) {
      actors::detail::log().warn("lbfgs: worker {} ({}) lost: {}", w,
                                 where_name(st.where, st.where.worker_at(w)),
                                 self->system().render(msg.reason));
      lose_worker(self, w);
      return;
    }
}

void give(lbfgs_driver_ptr self, std::size_t w) {
  auto& st = self->state;
  if (!st.table || st.table->done() || !st.live[w] || st.busy[w])
    return;
  if (auto p = st.table->assign(static_cast<std::uint32_t>(w))) {
    actors::detail::log().debug("lbfgs: pass {} portion {} to worker {}",
                                st.pass, *p, w);
    st.busy[w] = true;
    auto serial = ++st.handed;
    st.assignment[w] = serial;
    self->send(st.workers[w], grad_atom::value, st.pass,
               static_cast<std::uint64_t>(*p));
    // A worker that does not answer within the request timeout (hung, or
    // its node frozen) is given up: its portions go to the others.
    self->delayed_send(self, actors::to_chrono(st.job->request_timeout),
                       tick_atom::value, static_cast<std::uint32_t>(w), serial);
  }
}

void lose_worker(lbfgs_driver_ptr self, std::size_t w) {
  auto& st = self->state;
  st.live[w] = false;
  st.busy[w] = false;
  ++st.lost;
  actors::detail::log().warn("lbfgs: worker {}'s portions re-issued", w);
  if (st.table)
    st.table->lose(static_cast<std::uint32_t>(w));
  if (std::find(st.live.begin(), st.live.end(), true) == st.live.end()) {
    finish(self, "failed", "lbfgs: every worker was lost");
    return;
  }
  for (std::size_t v = 0; v < st.workers.size(); ++v)
    give(self, v);
}

void place_roles(lbfgs_driver_ptr self, std::function<void()> k) {
  auto& st = self->state;
  const auto& job = *st.job;
  const auto& where = st.where;
  st.shards.resize(job.shards);
  st.workers.resize(job.workers);
  st.live.assign(job.workers, true);
  st.busy.assign(job.workers, false);
  st.assignment.assign(job.workers, 0);
  st.results.assign(job.workers, 0);
  auto failed = [self](const std::string& what, const caf::error& e) {
    finish(self, "placement failed",
           "lbfgs: " + what + ": " + self->system().render(e), false);
  };
  // Workers once every shard exists (they are given the shards' handles).
  auto spawn_workers = [self, k, failed] {
    auto& st = self->state;
    const auto& job = *st.job;
    std::vector<caf::actor> shard_handles;
    for (auto& s : st.shards)
      shard_handles.push_back(caf::actor_cast<caf::actor>(s));
    auto left = std::make_shared<std::size_t>(job.workers);
    auto placed = [self, left, k](std::size_t w, caf::actor h) {
      self->state.workers[w] = h;
      self->monitor(h);
      if (--*left == 0) {
        start_monitoring(self); // its first poll sees every role
        k();
      }
    };
    for (std::uint32_t w = 0; w < job.workers; ++w) {
      auto n = st.where.worker_at(w);
      if (n < 0) {
        placed(w, self->spawn<caf::detached>(lbfgs_worker, w,
                                             caf::actor_cast<caf::actor>(self),
                                             st.shards, st.ranges, st.job));
        continue;
      }
      self->request(st.where.nodes.at(static_cast<std::size_t>(n)),
                    job.request_timeout, spawn_atom::value,
                    std::string{"lbfgs_worker"},
                    caf::make_message(worker_id{w}, shard_handles,
                                      caf::actor_cast<caf::actor>(self)))
          .then([placed, w](caf::actor& h) { placed(w, h); },
                [failed, w, n, self](caf::error& e) {
                  failed("worker " + std::to_string(w) + " on "
                             + where_name(self->state.where, n),
                         e);
                });
    }
  };
  auto left = std::make_shared<std::size_t>(job.shards);
  auto placed
      = [self, left, spawn_workers](std::size_t i, lbfgs_shard_actor h) {
          self->state.shards[i] = h;
          self->monitor(h);
          if (--*left == 0)
            spawn_workers();
        };
  for (std::uint32_t i = 0; i < job.shards; ++i) {
    auto n = where.shard_at(i);
    if (n < 0) {
      placed(i, self->spawn(lbfgs_shard,
                            lbfgs_shard_config{i, st.ranges[i], job.init,
                                               job.options.memory,
                                               self->address()}));
      continue;
    }
    self->request(where.nodes.at(static_cast<std::size_t>(n)),
                  job.request_timeout, spawn_atom::value,
                  std::string{"lbfgs_shard"}, caf::make_message(i))
        .then(
            [placed, i](caf::actor& h) {
              placed(i, caf::actor_cast<lbfgs_shard_actor>(h));
            },
            [failed, i, n, self](caf::error& e) {
              failed("shard " + std::to_string(i) + " on "
                         + where_name(self->state.where, n),
                     e);
            });
  }
}

} // namespace detail

void check(const lbfgs_job& job) {
  if (!job.init || job.init->empty())
    throw std::invalid_argument("lbfgs: no parameters");
  if (job.shards == 0 || job.shards > job.init->size())
    throw std::invalid_argument(
        "lbfgs: " + std::to_string(job.shards) + " shards for "
        + std::to_string(job.init->size()) + " parameters");
  if (job.workers == 0)
    throw std::invalid_argument("lbfgs: no workers");
  if (job.portions == 0)
    throw std::invalid_argument("lbfgs: no portions");
  if (!job.compute && !job.make_compute)
    throw std::invalid_argument("lbfgs: no portion function");
  if (job.options.memory == 0)
    throw std::invalid_argument("lbfgs: the memory must be at least 1");
  for (auto f : job.slowdown)
    if (!(f >= 1))
      throw std::invalid_argument("lbfgs: a slowdown factor below 1");
}

nlohmann::json run_lbfgs_in(caf::actor_system& sys,
                            std::shared_ptr<const lbfgs_job> job,
                            const actors::placement_plan& where,
                            std::chrono::seconds timeout) {
  check(*job);
  auto driver = sys.spawn(detail::lbfgs_driver, job, where);
  nlohmann::json out;
  caf::scoped_actor self{sys};
  self->request(driver, timeout, result_atom::value)
      .receive([&](std::string& text) { out = nlohmann::json::parse(text); },
               [&](caf::error& e) {
                 caf::anon_send_exit(driver, caf::exit_reason::user_shutdown);
                 out = {{"error", "lbfgs: " + sys.render(e)},
                        {"stop_reason", "failed"}};
               });
  return out;
}

nlohmann::json run_lbfgs(const lbfgs_job& job) {
  try {
    check(job);
  } catch (const std::invalid_argument& e) {
    return {{"error", e.what()}, {"stop_reason", "failed"}};
  }
  caf::actor_system_config cfg;
  messages::register_types(cfg);
  caf::actor_system sys{cfg};
  // The caller keeps `job`; an aliasing pointer that owns nothing.
  std::shared_ptr<const lbfgs_job> ref{std::shared_ptr<const lbfgs_job>{},
                                       &job};
  return run_lbfgs_in(sys, ref, {}, std::chrono::hours{24});
}

} // namespace troupe::algos
