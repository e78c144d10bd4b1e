// A shard whose node was lost comes back from the latest checkpoint (issue
// [11]): spawned in the coordinator's process from its file there, the
// workers and the evaluator are given its new handle, and training goes
// on. The pushes it applied since the checkpoint (and those sent to it
// while it was gone) are lost, and counted: each worker reports the pushes
// it sent, the restored shard the pushes it received from each.

#include <map>

#include <caf/actor_cast.hpp>

#include "actors/detail/coordinator_ops.hpp"
#include "actors/detail/log.hpp"
#include "actors/roles.hpp"

namespace troupe::actors::detail {

using namespace messages;

bool shards_restorable(const coordinator_state& st) {
  if (!st.config.checkpoints.write || st.finishing || !st.config.algorithm
      || !st.config.algorithm->restores_shards(st.config)
      || st.shard_states.size() != st.shards.size())
    return false;
  for (const auto& s : st.shard_states)
    if (!s)
      return false;
  return true;
}

void rebind_workers(coordinator_ptr self, std::size_t i, const caf::actor& h) {
  auto& st = self->state;
  // A request (a typed actor sends to a dynamically typed one only so); the
  // answer is empty, a worker that ended meanwhile does not matter.
  for (std::size_t w = 0; w < st.workers.size(); ++w)
    if (st.workers[w] && !st.gone[w])
      self->request(caf::actor_cast<caf::actor>(st.workers[w]),
                    st.config.request_timeout, rebind_atom::value,
                    static_cast<std::uint32_t>(i), h)
          .then([] {}, [](caf::error&) {});
}

void rebind(coordinator_ptr self, std::size_t i, const caf::actor& h) {
  auto& st = self->state;
  if (st.run)
    st.run->shard_restored(self, i, h);
  else
    rebind_workers(self, i, h);
  if (st.eval)
    self->send(st.eval, rebind_atom::value, static_cast<std::uint32_t>(i),
               caf::actor_cast<parameter_shard_actor>(h));
}

void restore_shard(coordinator_ptr self, std::size_t i,
                   const std::string& node) {
  auto& st = self->state;
  auto sc = shard_config(st.config, static_cast<std::uint32_t>(i));
  sc.state = st.shard_states[i];
  // Synchronous rounds: the restored shard moves to the job's round.
  sc.catch_up = sc.mode == shard_mode::sync;
  auto h = self->spawn(parameter_shard, sc);
  self->monitor(h);
  // Its checkpoint still tracks the workers that finished or were lost
  // since: rounds (and SSP's bound) must not wait for them.
  if (tracks_clocks(st.config))
    for (std::size_t w = 0; w < st.workers.size(); ++w)
      if (!st.live[w])
        self->send(h, untrack_atom::value, static_cast<worker_id>(w));
  st.shards[i].handle = h;
  st.shard_lost[i] = false;
  // It lives here now: a later loss of that node is not its loss.
  auto& where = st.config.placement.shard_node;
  if (i < where.size())
    where[i] = -1;
  restored_shard r;
  r.index = static_cast<std::uint32_t>(i);
  r.node = node;
  r.checkpoint_steps = st.shard_states_steps;
  r.steps_at_loss = st.total_steps;
  r.seconds = seconds_since(self, st.t0);
  st.restored.push_back(r);
  r.to = "local";
  rebind(self, i, caf::actor_cast<caf::actor>(h));
  log().warn("shard {} (lost with {}) restored here from the checkpoint at "
             "step {}; the job is at step {}",
             i, node, r.checkpoint_steps, r.steps_at_loss);
}

nlohmann::json restored_report(const coordinator_state& st,
                               const std::vector<shard_stats>& shards,
                               const std::vector<worker_stats>& ws) {
  auto out = nlohmann::json::array();
  std::map<worker_id, std::uint64_t> sent;
  for (const auto& w : ws)
    sent[w.worker] = w.pushes;
  // The restored shard's counts carry on from the checkpoint's; a worker
  // that did not report (lost) sent an unknown number of pushes.
  bool exact = ws.size() == st.workers.size()
               && (!st.run || st.run->pushes_sent(sent));
  for (const auto& r : st.restored) {
    nlohmann::json j{
        {"shard", r.index},
        {"node", r.node},
        {"from", r.from},
        {"to", r.to},
        {"checkpoint_steps", r.from == "checkpoint"
                                 ? nlohmann::json(r.checkpoint_steps)
                                 : nlohmann::json(nullptr)},
        {"steps_at_loss", r.steps_at_loss},
        {"seconds", r.seconds}};
    const shard_stats* s = nullptr;
    for (const auto& x : shards)
      if (x.shard == r.index)
        s = &x;
    if (s && exact) {
      std::uint64_t lost = 0;
      for (const auto& [w, n] : sent) {
        std::uint64_t got = 0;
        for (const auto& p : s->workers)
          if (p.worker == w)
            got = p.applied + p.non_finite + p.bad_range;
        lost += n > got ? n - got : 0;
      }
      j["lost_pushes"] = lost;
    } else {
      j["lost_pushes"] = nullptr; // not known: a worker did not report
    }
    out.push_back(std::move(j));
  }
  return out;
}

} // namespace troupe::actors::detail
