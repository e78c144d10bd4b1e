// The end of a job: the coordinator stops the workers, collects the
// statistics, evaluates once more and delivers the report.

#include <algorithm>

#include "actors/coordinator.hpp"
#include "actors/detail/coordinator_ops.hpp"
#include "actors/detail/log.hpp"
#include "actors/roles.hpp"

namespace troupe::actors {

using namespace messages;

namespace detail {

using self_ptr = coordinator_ptr;

namespace {

/// The result to whoever asked for it, and the coordinator's end (or it
/// stays until the result is asked for).
void hand_over(self_ptr self) {
  auto& st = self->state;
  if (st.waiting.empty())
    return;
  for (auto& p : st.waiting)
    p.deliver(*st.result);
  st.waiting.clear();
  self->quit();
}

void node_stopped(self_ptr self) {
  if (--self->state.nodes_stopping == 0)
    hand_over(self);
}

} // namespace

void deliver(self_ptr self, std::string text) {
  auto& st = self->state;
  st.result = std::move(text);
  for (auto& o : st.config.observers)
    o->on_finish(*st.result);
  for (auto& s : st.shards)
    if (s.handle)
      self->send_exit(s.handle, caf::exit_reason::user_shutdown);
  for (auto& b : st.backups) // hot replicas
    if (b)
      self->send_exit(b, caf::exit_reason::user_shutdown);
  for (auto& b : st.attaching)
    self->send_exit(b, caf::exit_reason::user_shutdown);
  st.attaching.clear();
  if (st.eval)
    self->send_exit(st.eval, caf::exit_reason::user_shutdown);
  // Lingering workers here and the algorithm's own roles; the nodes stop
  // their own.
  for (auto& w : st.workers)
    if (w && w.node() == self->node())
      self->send_exit(w, caf::exit_reason::user_shutdown);
  if (st.run)
    st.run->stop(self);
  // Nodes stop whatever they still host, then exit (non-zero when the
  // reason says the job failed).
  auto why = st.error.empty()
                 ? st.stop_reason
                 : failed_prefix + st.stop_reason + ": " + st.error;
  // Asked, not told: the result waits for every node's answer (or a
  // failure), since a stop still queued at this process's exit is lost
  // and its node would see the coordinator lost instead of the job's end.
  st.nodes_stopping = st.config.placement.nodes.size();
  for (auto& node : st.config.placement.nodes)
    self->request(node, std::chrono::seconds{10}, stop_atom::value, why)
        .then([self] { node_stopped(self); },
              [self](caf::error&) { node_stopped(self); });
  if (st.nodes_stopping == 0)
    hand_over(self);
}

namespace {

void final_report(self_ptr self) {
  auto& st = self->state;
  bool shard_lost = std::find(st.shard_lost.begin(), st.shard_lost.end(), true)
                    != st.shard_lost.end();
  if (shard_lost && !st.have_eval) {
    deliver(self, job_report(st, nullptr).dump());
    return;
  }
  // After a divergence re-evaluate the last evaluated (good) parameters; at
  // the target, report the parameters that reached it (asynchronous workers
  // may have taken a few more steps before the stop reached them).
  bool refetch
      = (st.error.empty() && !st.reached && !shard_lost) || !st.have_eval;
  self->request(st.eval, st.config.request_timeout, eval_atom::value, refetch)
      .then(
          [self](eval_msg& e) {
            deliver(self, job_report(self->state, &e).dump());
          },
          [self](caf::error& err) {
            auto& st = self->state;
            if (st.error.empty())
              st.error
                  = "final evaluation failed: " + self->system().render(err);
            deliver(
                self,
                job_report(st, st.have_eval ? &st.last_eval : nullptr).dump());
          });
}

/// The algorithm's own roles' final figures, then the report.
void collect_run_stats(self_ptr self) {
  auto& st = self->state;
  if (!st.run) {
    final_report(self);
    return;
  }
  st.run->finish(self, [self] { final_report(self); });
}

void collect_shard_stats(self_ptr self) {
  auto& st = self->state;
  auto remaining = std::make_shared<std::size_t>(
      std::count(st.shard_lost.begin(), st.shard_lost.end(), false));
  if (*remaining == 0) {
    collect_run_stats(self);
    return;
  }
  for (std::size_t i = 0; i < st.shards.size(); ++i) {
    if (st.shard_lost[i])
      continue;
    self->request(st.shards[i].handle, st.config.request_timeout,
                  stats_atom::value)
        .then(
            [self, remaining](shard_stats& x) {
              self->state.shard_reports.push_back(std::move(x));
              if (--*remaining == 0)
                collect_run_stats(self);
            },
            [self, remaining](caf::error& err) {
              detail::log().error("a shard did not report: {}",
                                  self->system().render(err));
              if (--*remaining == 0)
                collect_run_stats(self);
            });
  }
}

} // namespace

/// Ends the job: stops the workers (high priority, so a busy worker sees the
/// stop before its next step), collects statistics, evaluates, reports.
void finish(self_ptr self, std::string reason) {
  auto& st = self->state;
  if (st.finishing)
    return;
  if (st.probe)
    st.probe->activity("finishing");
  if (!st.provisioned) {
    // Roles are still being placed: finish once they all exist.
    if (!st.pending_finish)
      st.pending_finish = std::move(reason);
    return;
  }
  // Checkpoints: a finish during one waits for it; a stop before the
  // steps are done (a signal, the time limit) writes one first, the
  // workers staying paused.
  if (st.checkpointing) {
    if (!st.finish_after_checkpoint)
      st.finish_after_checkpoint = std::move(reason);
    return;
  }
  if (st.config.checkpoints.write && !st.stop_checkpointed && st.error.empty()
      && reason != "steps done" && reason != "partially done"
      && reason != "target accuracy") {
    st.stop_checkpointed = true;
    st.finish_after_checkpoint = reason;
    if (checkpoint(self, [] {}))
      return;
    st.finish_after_checkpoint.reset();
  }
  st.finishing = true;
  st.stop_reason = std::move(reason);
  st.train_end = seconds_since(self, st.t0);
  // Workers that linger after their last step (algorithm::lingers: LSGD,
  // SGP, DS-Sync, ShadowSync) report again: SGP's weights and the mixes that
  // arrived after their done message count.
  std::vector<bool> ask(st.workers.size(), false);
  bool linger = lingers(st.config);
  std::vector<std::size_t> lingering;
  for (std::size_t w = 0; w < st.workers.size(); ++w) {
    // Never a worker known gone: its request would wait out the timeout.
    ask[w] = (st.live[w] || (linger && st.workers[w])) && !st.gone[w];
    if (!st.live[w])
      lingering.push_back(w);
  }
  for (auto& f : st.failures)
    if (f.role == "worker" && f.index < ask.size())
      ask[f.index] = false;
  auto remaining
      = std::make_shared<std::size_t>(std::count(ask.begin(), ask.end(), true));
  if (*remaining == 0) {
    collect_shard_stats(self);
    return;
  }
  for (std::size_t w = 0; w < st.workers.size(); ++w) {
    if (!ask[w])
      continue;
    st.live[w] = false;
    auto on_stats = [self, remaining](worker_stats& x) {
      auto& reports = self->state.worker_reports;
      auto it = std::find_if(reports.begin(), reports.end(),
                             [&](auto& r) { return r.worker == x.worker; });
      if (it != reports.end())
        *it = std::move(x);
      else
        reports.push_back(std::move(x));
      if (--*remaining == 0)
        collect_shard_stats(self);
    };
    auto on_error = [self, remaining](caf::error&) {
      // Finished between our stop and its arrival: its done message
      // carries the report.
      if (--*remaining == 0)
        collect_shard_stats(self);
    };
    // CAF 0.17.6 loses the response to a high-priority request that crossed
    // the network (the request arrives, the response never does), so only
    // workers in this process get the stop at high priority.
    // A lingering worker is idle: a normal stop arrives after the shares
    // its peers sent before they were done (SGP's weights at quiescence).
    auto& handle = st.workers[w];
    bool busy
        = std::find(lingering.begin(), lingering.end(), w) == lingering.end();
    if (busy && handle.node() == self->node())
      self->request<caf::message_priority::high>(
              handle, st.config.request_timeout, stop_atom::value)
          .then(on_stats, on_error);
    else
      self->request(handle, st.config.request_timeout, stop_atom::value)
          .then(on_stats, on_error);
  }
}

} // namespace detail

} // namespace troupe::actors
