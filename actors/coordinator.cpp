#include "actors/coordinator.hpp"

#include <caf/send.hpp>

#include "actors/detail/caller.hpp"
#include "actors/detail/coordinator_ops.hpp"
#include "actors/detail/log.hpp"
#include "actors/roles.hpp"
#include "messages/errors.hpp"
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"

namespace troupe::actors {

using namespace messages;

namespace detail {

using self_ptr = coordinator_ptr;

bool tracks_clocks(const job_config& c) {
  return c.algorithm && c.algorithm->tracks_clocks(c);
}

namespace {

job_progress snapshot(self_ptr self) {
  const auto& st = self->state;
  job_progress p;
  p.steps = st.total_steps;
  p.samples = st.total_samples;
  auto budget = st.config.steps_per_worker * st.config.workers;
  p.fraction = budget > 0 ? static_cast<double>(st.total_steps)
                                / static_cast<double>(budget)
                          : 0;
  p.loss = st.smooth_loss;
  p.accuracy = st.have_eval ? st.last_eval.accuracy.value : -1;
  p.seconds = seconds_since(self, st.t0);
  return p;
}

} // namespace

void start_worker(self_ptr self, std::size_t w, std::uint64_t clock) {
  auto& st = self->state;
  if (st.started[w] || !st.live[w])
    return;
  st.started[w] = true;
  // A resumed job's shards know the clocks from their checkpoint.
  if (!tracks_clocks(st.config) || st.config.resume) {
    self->send(st.workers[w], start_atom::value, clock);
    return;
  }
  // Every shard must count the worker before its first push arrives, or a
  // round completes without it. The push may travel another route than
  // this track (a direct link between nodes, net/peer_link.hpp), so the
  // worker starts once each shard answered a request sent after the track:
  // one sender's messages arrive in order.
  auto remaining = std::make_shared<std::size_t>(0);
  auto go = [self, w, clock, remaining] {
    if (--*remaining > 0)
      return;
    auto& st = self->state;
    if (st.live[w] && !st.finishing)
      self->send(st.workers[w], start_atom::value, clock);
  };
  ++*remaining; // released below, once every request is out
  for (std::size_t i = 0; i < st.shards.size(); ++i) {
    if (st.shard_lost[i])
      continue;
    const auto& s = st.shards[i].handle;
    self->send(s, track_atom::value, static_cast<worker_id>(w), clock);
    ++*remaining;
    self->request(s, st.config.request_timeout, stats_atom::value)
        .then([go](const shard_stats&) { go(); },
              [go](const caf::error&) { go(); });
  }
  go();
}

namespace {

void maybe_evaluate(self_ptr self) {
  auto& st = self->state;
  if (st.eval_pending || st.finishing || st.config.eval_every_steps == 0
      || !st.config.evaluate || st.total_steps < st.next_eval)
    return;
  st.eval_pending = true;
  while (st.next_eval <= st.total_steps)
    st.next_eval += st.config.eval_every_steps;
  auto at_steps = st.total_steps;
  self->request(st.eval, st.config.request_timeout, eval_atom::value, true)
      .then(
          [self, at_steps](eval_msg& e) {
            auto& st = self->state;
            st.eval_pending = false;
            st.last_eval = e;
            st.have_eval = true;
            auto elapsed = seconds_since(self, st.t0);
            st.evaluations.push_back({{"steps", at_steps},
                                      {"samples", st.total_samples},
                                      {"seconds", elapsed},
                                      {"test_accuracy", e.accuracy.value},
                                      {"test_loss", e.loss.value}});
            if (st.config.on_progress)
              st.config.on_progress(snapshot(self), true);
            evaluation_event ev{at_steps, st.total_samples, elapsed,
                                e.accuracy.value, e.loss.value};
            for (auto& o : st.config.observers)
              o->on_evaluation(ev);
            if (st.config.target_accuracy > 0
                && e.accuracy.value >= st.config.target_accuracy
                && !st.finishing) {
              st.reached = true;
              st.seconds_to_target = elapsed;
              finish(self, "target accuracy");
            }
          },
          [self](caf::error& err) {
            self->state.eval_pending = false;
            detail::log().warn("evaluation failed: {}",
                               self->system().render(err));
          });
}

} // namespace

void begin(self_ptr self) {
  auto& st = self->state;
  spawn_evaluator(self);
  st.provisioned = true;
  st.probe->activity("training");
  for (auto& w : st.workers)
    self->monitor(w);
  for (auto& s : st.shards)
    self->monitor(s.handle);
  st.t0 = now(self);
  st.checkpoint_time = st.t0;
  if (st.config.resume) {
    try {
      restore_progress(self);
    } catch (const std::exception& e) {
      placement_failed(self, "cannot resume from " + st.config.resume->path
                                 + ": " + e.what());
      return;
    }
  }
  if (st.pending_finish) {
    auto reason = std::move(*st.pending_finish);
    st.pending_finish.reset();
    finish(self, std::move(reason));
    return;
  }
  if (is_peer_to_peer(st.config)) {
    // Before the start (same sender, so it arrives first): the handles of
    // the ranks each worker exchanges with, and no others; or one table of
    // them all, shared.
    handle_table all;
    if (st.config.algorithm->any_peer(st.config)) {
      auto table = std::make_shared<std::vector<caf::actor>>();
      for (auto& h : st.workers)
        table->push_back(caf::actor_cast<caf::actor>(h));
      all.handles = std::move(table);
    }
    for (std::size_t w = 0; w < st.workers.size(); ++w) {
      peer_list_msg m;
      if (all.size() > 0) {
        m.all = all;
        self->send(st.workers[w], peers_atom::value, std::move(m));
        continue;
      }
      m.ranks = st.config.algorithm->peer_ranks(st.config,
                                                static_cast<worker_id>(w));
      for (auto r : m.ranks)
        m.handles.push_back(r < st.workers.size()
                                ? caf::actor_cast<caf::actor>(st.workers[r])
                                : caf::actor{});
      self->send(st.workers[w], peers_atom::value, std::move(m));
    }
  }
  // Nodes may join the running job: the join service hands them over.
  if (st.config.join_service && st.config.algorithm->elastic(st.config))
    // (The join service is dynamically typed for the coordinator.)
    caf::unsafe_send_as(self, st.config.join_service, elastic_atom::value,
                        caf::actor_cast<caf::actor>(self));
  // A checkpoint is only taken once every worker has started.
  bool warm = st.config.algorithm->warm_start_steps() > 0 && !st.config.resume;
  for (std::size_t w = 0; w < st.workers.size(); ++w)
    if (!warm || w == 0)
      start_worker(self, w, 0);
  if (st.config.max_seconds > 0)
    self->delayed_send(self,
                       std::chrono::microseconds{static_cast<std::int64_t>(
                           st.config.max_seconds * 1e6)},
                       stop_atom::value);
}

void start_monitoring(self_ptr self) {
  auto& c = self->state.config;
  if (!c.monitor)
    return;
  self->state.cluster_monitor = spawn_cluster_monitoring(
      self, c.monitor, c.node_name, c.placement.nodes, c.placement.node_names,
      c.monitor_interval);
}

} // namespace detail

using namespace detail;

coordinator_actor::behavior_type coordinator(self_ptr self, job_config config) {
  auto& st = self->state;
  st.config = std::move(config);
  st.next_eval = st.config.eval_every_steps;
  st.t0 = now(self);
  // Refuse a job that cannot be built (e.g. an unknown server optimizer)
  // with its reason, before any actor is spawned.
  try {
    auto& c = st.config;
    if (!c.init || c.init->empty() || c.workers == 0
        || c.shards > c.init->size() || !c.make_replica)
      throw std::invalid_argument("a job needs initial parameters, a replica "
                                  "factory, workers and at most one shard "
                                  "per parameter");
    check_algorithm(c); // an algorithm first
    if ((c.shards == 0) == needs_shards(c))
      throw std::invalid_argument(
          needs_shards(c) ? c.algorithm->name() + " needs at least one shard"
                          : c.algorithm->name() + " has no parameter shards");
    optim::check_optimizer(c.server.optimizer);
    if (c.server.lr_schedule)
      optim::schedule{*c.server.lr_schedule};
    st.run = c.algorithm->start(c);
    if (c.resume) // the algorithm's roles start from their files
      st.run->restore(*c.resume);
  } catch (const std::exception& e) {
    st.run.reset();
    st.error = std::string{"invalid job: "} + e.what();
    st.stop_reason = "invalid job";
    st.finishing = true;
    deliver(self, job_report(st, nullptr).dump());
    return {
        [](progress_msg&) {},
        [](done_atom, worker_stats&) {},
        [](stop_atom) {},
        [](leader_atom, std::uint32_t, std::string&, std::uint64_t) {},
        [self](result_atom) -> caf::result<std::string> {
          self->quit();
          return *self->state.result;
        },
        [](join_atom, hello_msg&, caf::actor&) -> caf::result<std::uint32_t> {
          return make_error(errc::join_refused, "the job is invalid");
        }};
  }
  if (auto stop = st.config.stop) {
    if (stop->attach(caf::actor_cast<caf::actor>(self)))
      self->send(self, stop_atom::value);
    self->attach_functor([stop] { stop->detach(); });
  }
  self->set_down_handler(
      [self](caf::down_msg& msg) { detail::on_down(self, msg); });
  st.probe = make_probe(self, "coordinator", "coordinator", true);
  st.probe->activity("provisioning");
  provision(self);
  start_monitoring(self); // after provisioning: its first poll sees the roles
  return {
      [self](progress_msg& p) {
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, msg_type::progress,
                                small_message_bytes);
        st.probe->progress();
        // A worker counted lost (its node's first role reported down) may
        // have progress still queued: its steps stay as counted at the loss.
        if (p.worker >= st.workers.size() || st.gone[p.worker])
          return;
        st.worker_steps[p.worker] = p.steps;
        ++st.total_steps;
        st.total_samples += p.samples;
        st.last_loss = p.loss.value;
        st.smooth_loss = st.total_steps == 1
                             ? p.loss.value
                             : 0.98 * st.smooth_loss + 0.02 * p.loss.value;
        if (auto warm = st.config.algorithm->warm_start_steps();
            p.worker == 0 && warm > 0 && p.steps == warm)
          for (std::size_t w = 1; w < st.workers.size(); ++w)
            start_worker(self, w, p.steps);
        if (st.config.on_progress)
          st.config.on_progress(snapshot(self), false);
        if (!st.config.observers.empty()) {
          step_event ev{p.worker, p.steps, p.samples, p.loss.value,
                        seconds_since(self, st.t0)};
          for (auto& o : st.config.observers)
            o->on_step(ev);
        }
        st.run->on_steps(self, st.total_steps);
        maybe_evaluate(self);
        maybe_checkpoint(self);
      },
      [self](leader_atom, std::uint32_t group, std::string& leader,
             std::uint64_t changes) {
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, msg_type::leader,
                                small_message_bytes);
        leader_event ev{group, std::move(leader), changes,
                        seconds_since(self, st.t0), group >= st.run->groups()};
        for (auto& o : st.config.observers)
          o->on_leader_change(ev);
      },
      [self](done_atom, worker_stats& x) {
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, msg_type::done,
                                small_message_bytes);
        st.probe->progress();
        auto w = x.worker;
        if (w >= st.workers.size())
          return;
        bool was_live = st.live[w] && !st.gone[w];
        if (!was_live)
          return; // counted lost already, or a second report
        st.live[w] = false;
        detail::checkpoint_worker_gone(self, w, "finished");
        st.worker_reports.push_back(x);
        // A worker that finished left the shards' clocks itself, after its
        // last push (ps_policy's on_finish): an untrack from here could
        // overtake that push. A failed one ends the job.
        if (!x.error.empty()) {
          if (st.error.empty())
            st.error = x.error;
          finish(self, "worker failed");
          return;
        }
        // Warm start with fewer steps than the warm-up: release the others.
        if (w == 0)
          for (std::size_t i = 1; i < st.workers.size(); ++i)
            start_worker(self, i, x.steps);
        // A hand-over that reached it after its last step: the steps go to
        // the live workers.
        if (x.steps < st.quota[w] && !st.finishing)
          hand_back(self, w, x.steps);
        // A join under way holds steps the live workers ceded: its
        // workers finish the job (coordinator_join.cpp).
        if (all_workers_done(st) && !st.finishing && !st.joining)
          finish(self,
                 st.steps_unassigned > 0 ? "partially done" : "steps done");
      },
      [self](stop_atom) {
        if (!detail::from_here(self)) {
          detail::refuse(self, "the coordinator", "stop", "its own process");
          return;
        }
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, msg_type::stop,
                                small_message_bytes);
        bool timed_out = st.config.max_seconds > 0
                         && seconds_since(self, st.t0) >= st.config.max_seconds;
        auto& stop = st.config.stop;
        finish(self, timed_out                   ? "time limit"
                     : stop && stop->requested() ? stop->reason()
                                                 : "stop requested");
      },
      [self](join_atom, hello_msg& hello,
             caf::actor& agent) -> caf::result<std::uint32_t> {
        if (!detail::from_here(self))
          return detail::refuse(self, "the coordinator", "join",
                                "its own process");
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, msg_type::other,
                                small_message_bytes);
        return detail::join(self, std::move(hello), std::move(agent));
      },
      [self](result_atom) -> caf::result<std::string> {
        if (!detail::from_here(self))
          return detail::refuse(self, "the coordinator", "result",
                                "its own process");
        auto& st = self->state;
        auto scope = on_message(st.probe.get(), self, msg_type::result,
                                small_message_bytes);
        if (st.result && st.nodes_stopping == 0) {
          self->quit();
          return *st.result;
        }
        auto p = self->make_response_promise<std::string>();
        st.waiting.push_back(p);
        return p;
      },
  };
}

} // namespace troupe::actors
