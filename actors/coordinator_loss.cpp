// The coordinator's losses: a role whose node died or hung, its steps
// handed to the live workers, and the exact count of the steps lost.

#include <algorithm>

#include "actors/detail/coordinator_ops.hpp"
#include "actors/detail/log.hpp"
#include "actors/roles.hpp"

namespace troupe::actors {

using namespace messages;

namespace detail {

namespace {

failure_record record(coordinator_ptr self, std::string role, std::size_t index,
                      std::string node, const caf::error& reason) {
  failure_record f;
  f.role = std::move(role);
  f.index = static_cast<std::uint32_t>(index);
  f.node = std::move(node);
  f.reason = self->system().render(reason);
  f.seconds = seconds_since(self, self->state.t0);
  f.unix_ms = unix_ms(self);
  return f;
}

/// Tells the observers of a failure and keeps it for the report.
void keep(coordinator_state& st, failure_record f) {
  bool first_of_node
      = std::none_of(st.failures.begin(), st.failures.end(),
                     [&](const failure_record& x) { return x.node == f.node; });
  for (auto& o : st.config.observers) {
    o->on_failure(f);
    if (first_of_node)
      o->on_node_lost({f.node, f.reason, f.seconds});
  }
  st.failures.push_back(std::move(f));
}

/// Hands `left` steps to the live workers (shares differ by at most one, so
/// none is lost to rounding); `lost` is the worker they came from, `data`
/// whether its examples go along. Returns the receivers, or none (the steps
/// are then counted unassigned).
std::vector<std::uint32_t> hand_over(coordinator_ptr self, std::size_t lost,
                                     std::uint64_t left, bool data,
                                     std::uint64_t& largest_share) {
  auto& st = self->state;
  std::vector<std::uint32_t> to;
  for (std::size_t i = 0; i < st.workers.size(); ++i)
    if (st.live[i] && !st.gone[i])
      to.push_back(static_cast<std::uint32_t>(i));
  largest_share = 0;
  if (to.empty()) {
    st.steps_unassigned += left;
    return to;
  }
  auto m = static_cast<std::uint32_t>(to.size());
  for (std::uint32_t k = 0; k < m; ++k) {
    auto share = left / m + (k < left % m ? 1 : 0);
    largest_share = std::max(largest_share, share);
    st.quota[to[k]] += share;
    self->send(st.workers[to[k]], adopt_atom::value,
               static_cast<worker_id>(lost), data ? k : 0u, data ? m : 0u,
               share);
  }
  st.steps_reassigned += left;
  return to;
}

/// The note of a partial completion: steps no live worker could take.
void note_unassigned(coordinator_state& st, const std::string& who,
                     std::uint64_t steps, const std::string& why) {
  if (steps == 0)
    return;
  auto note
      = who + ": " + std::to_string(steps) + " steps not taken (" + why + ")";
  st.warning += (st.warning.empty() ? "" : "; ") + note;
  log().warn("{}", note);
}

constexpr const char* nobody_left = "no live worker left to take them";

/// Workers `ws` are lost at once (one node's): all are marked before any
/// of their steps are handed over, so none goes to a worker already dead.
void lose_workers(coordinator_ptr self, const std::vector<std::size_t>& ws,
                  const caf::error& why) {
  auto& st = self->state;
  auto& c = st.config;
  for (auto w : ws) {
    st.live[w] = false;
    st.gone[w] = true;
  }
  for (auto w : ws)
    checkpoint_worker_gone(self, w, "was lost");
  std::vector<failure_record> lost;
  for (auto w : ws) {
    auto f = record(self, "worker", w, worker_node_name(st, w), why);
    f.steps_done = st.worker_steps[w];
    log().error("worker {} on {} lost after {} steps: {}", w, f.node,
                f.steps_done, f.reason);
    if (tracks_clocks(c))
      for (auto& s : st.shards)
        self->send(s.handle, untrack_atom::value, static_cast<worker_id>(w));
    lost.push_back(std::move(f));
  }
  // A warm start waiting for worker 0: release the others now.
  if (std::find(ws.begin(), ws.end(), std::size_t{0}) != ws.end())
    for (std::size_t i = 1; i < st.workers.size(); ++i)
      if (st.live[i])
        start_worker(self, i, st.worker_steps[0]);
  // Peer-to-peer algorithms: the lost workers' neighbours (peer_ranks)
  // stop sending to them and waiting for them. (They monitor their peers too,
  // but a down message does not cross an indirect route between two nodes.)
  // With any_peer, every worker may meet any other: all are told.
  bool everyone = is_peer_to_peer(c) && c.algorithm->any_peer(c);
  for (auto w : ws) {
    if (everyone)
      for (std::size_t i = 0; i < st.workers.size(); ++i) {
        if (i != w && st.live[i])
          self->send(st.workers[i], leave_atom::value,
                     static_cast<worker_id>(w));
      }
    else if (is_peer_to_peer(c))
      for (auto i : c.algorithm->peer_ranks(c, static_cast<worker_id>(w)))
        if (i < st.workers.size() && st.live[i])
          self->send(st.workers[i], leave_atom::value,
                     static_cast<worker_id>(w));
    if (st.eval)
      self->send(st.eval, leave_atom::value, static_cast<worker_id>(w));
  }
  // Asynchronous algorithms: the survivors take over the lost workers'
  // examples and remaining steps (all of them, adopted ones included).
  // Synchronous ones go on with the survivors (the shards stopped waiting
  // for the lost workers above); their remaining steps are lost.
  for (std::size_t j = 0; j < ws.size(); ++j) {
    auto w = ws[j];
    auto& f = lost[j];
    auto left = st.quota[w] > f.steps_done ? st.quota[w] - f.steps_done : 0;
    st.quota[w] = std::min(st.quota[w], f.steps_done);
    auto who = "worker " + std::to_string(w) + " on " + f.node;
    if (c.algorithm->reassigns_steps()) {
      f.reassigned_to = hand_over(self, w, left, true, f.steps_reassigned);
      if (f.reassigned_to.empty()) {
        f.steps_unassigned = left;
        note_unassigned(st, who, left, nobody_left);
      }
    } else {
      st.steps_unassigned += left;
      f.steps_unassigned = left;
      note_unassigned(st, who, left,
                      c.algorithm->name()
                          + ": the survivors do not take a lost worker's part");
    }
    keep(st, std::move(f));
  }
  if (std::find(st.live.begin(), st.live.end(), true) != st.live.end())
    return;
  // No live worker: the job is over. A false "every worker was lost" would
  // hide the workers that completed their steps.
  bool completed
      = std::any_of(st.worker_reports.begin(), st.worker_reports.end(),
                    [](const worker_stats& r) { return r.error.empty(); });
  if (!completed) {
    if (st.error.empty())
      st.error = "every worker was lost";
    finish(self, "workers lost");
    return;
  }
  finish(self, st.steps_unassigned > 0 ? "partially done" : "steps done");
}

/// Shard i's hot backup on `node` was lost: the shard goes on without one.
void lose_backup(coordinator_ptr self, std::size_t i, const std::string& node,
                 const caf::error& why) {
  auto& st = self->state;
  auto f = record(self, "shard backup", i, node, why);
  log().warn("the hot backup of shard {} on {} was lost ({}); the shard goes "
             "on without one",
             i, node, f.reason);
  keep(st, std::move(f));
}

/// Shard i was lost on `node`: marked lost, unless its backup takes over
/// (then the loss is recorded and the shard is whole again).
void keep_if_taken_over(coordinator_ptr self, std::size_t i,
                        const std::string& node, const caf::error& why) {
  auto& st = self->state;
  st.shard_lost[i] = true;
  if (fail_over(self, i, node))
    keep(st, record(self, "shard", i, node, why));
}

/// The workers and shards placed on node n (-1: none).
void lose_node(coordinator_ptr self, std::int32_t n, const caf::error& why) {
  auto& st = self->state;
  const auto& plan = st.config.placement;
  std::vector<std::size_t> ws;
  for (std::size_t w = 0; w < st.workers.size(); ++w)
    if (plan.worker_at(w) == n) {
      if (st.live[w])
        ws.push_back(w);
      else if (!st.gone[w] && st.eval)
        // A finished (lingering) worker's model is no longer there to
        // average: the evaluator must not wait for it.
        self->send(st.eval, leave_atom::value, static_cast<worker_id>(w));
      st.gone[w] = true; // finished (lingering) ones too: nobody to ask
    }
  // Hot backups there are gone (before any takes over from that node).
  for (std::size_t i = 0; i < st.backups.size(); ++i)
    if (st.backups[i] && plan.backup_at(i) == n) {
      std::size_t index = 0;
      auto node = backup_node_of(st, i);
      if (backup_down(self, st.backups[i].address(), index))
        lose_backup(self, index, node, why);
    }
  std::vector<std::size_t> shards;
  for (std::size_t i = 0; i < st.shards.size(); ++i)
    if (plan.shard_at(i) == n && !st.shard_lost[i]) {
      auto node = shard_node_name(st, i);
      keep_if_taken_over(self, i, node, why);
      if (!st.shard_lost[i])
        continue; // its backup took over
      shards.push_back(i);
    }
  if (!shards.empty() && shards_restorable(st)) {
    for (auto i : shards) {
      auto node = shard_node_name(st, i);
      keep(st, record(self, "shard", i, node, why));
      restore_shard(self, i, node);
    }
    if (!ws.empty())
      lose_workers(self, ws, why);
    return;
  }
  if (!shards.empty()) {
    std::string names;
    for (auto i : shards) {
      keep(st, record(self, "shard", i, shard_node_name(st, i), why));
      names += (names.empty() ? "" : ", ") + std::to_string(i);
    }
    for (auto w : ws) {
      st.live[w] = false;
      checkpoint_worker_gone(self, w, "was lost");
      auto f = record(self, "worker", w, worker_node_name(st, w), why);
      f.steps_done = st.worker_steps[w];
      keep(st, std::move(f));
    }
    st.error
        = "shard " + std::to_string(shards[0]) + " on "
          + plan.name_of(n, "local") + " was lost ("
          + self->system().render(why) + ")"
          + (shards.size() > 1 ? " with shards " + names + " on that node" : "")
          + "; the report evaluates the last parameters fetched";
    log().error("{}", st.error);
    finish(self, "shard lost");
    return;
  }
  if (!ws.empty())
    lose_workers(self, ws, why);
}

} // namespace

void hand_back(coordinator_ptr self, std::size_t w, std::uint64_t steps) {
  auto& st = self->state;
  auto left = st.quota[w] - steps;
  st.quota[w] = steps;
  std::uint64_t largest = 0;
  auto to = hand_over(self, w, left, false, largest);
  log().warn("worker {} finished {} steps before the hand-over of {} more "
             "reached it; {}",
             w, steps, left,
             to.empty() ? "no live worker is left to take them"
                        : "the live workers take them");
  if (to.empty())
    note_unassigned(st, "worker " + std::to_string(w), left, nobody_left);
}

namespace {

/// A role's down reason that means its whole node is gone.
bool node_level(const caf::error& reason) {
  return reason == caf::exit_reason::remote_link_unreachable;
}

} // namespace

void on_down(coordinator_ptr self, const caf::down_msg& msg) {
  auto& st = self->state;
  if (st.result)
    return;
  const auto& plan = st.config.placement;
  for (std::size_t w = 0; w < st.workers.size(); ++w)
    if (st.workers[w] && st.workers[w].address() == msg.source) {
      bool was_gone = st.gone[w];
      st.gone[w] = true;
      checkpoint_worker_gone(self, w, "ended");
      if (st.finishing || was_gone)
        return;
      if (node_level(msg.reason) && plan.worker_at(w) >= 0)
        lose_node(self, plan.worker_at(w), msg.reason);
      else if (st.live[w])
        lose_workers(self, {w}, msg.reason);
      return;
    }
  if (st.run && st.run->on_down(self, msg))
    return;
  std::size_t b = 0;
  if (!st.finishing)
    for (std::size_t i = 0; i < st.backups.size(); ++i)
      if (st.backups[i] && st.backups[i].address() == msg.source) {
        if (node_level(msg.reason) && plan.backup_at(i) >= 0) {
          lose_node(self, plan.backup_at(i), msg.reason);
          return;
        }
        auto node = backup_node_of(st, i);
        if (backup_down(self, msg.source, b))
          lose_backup(self, b, node, msg.reason);
        return;
      }
  for (std::size_t i = 0; i < st.shards.size(); ++i)
    if (st.shards[i].handle && st.shards[i].handle.address() == msg.source) {
      if (st.shard_lost[i])
        return;
      if (st.finishing) {
        st.shard_lost[i] = true;
        return;
      }
      if (node_level(msg.reason) && plan.shard_at(i) >= 0) {
        lose_node(self, plan.shard_at(i), msg.reason);
        return;
      }
      keep_if_taken_over(self, i, shard_node_name(st, i), msg.reason);
      if (!st.shard_lost[i])
        return; // its backup took over
      auto f = record(self, "shard", i, shard_node_name(st, i), msg.reason);
      st.error = "shard " + std::to_string(i) + " on " + f.node + " was lost ("
                 + f.reason
                 + "); the report evaluates the last parameters fetched";
      log().error("{}", st.error);
      keep(st, std::move(f));
      finish(self, "shard lost");
      return;
    }
}

} // namespace detail

} // namespace troupe::actors
