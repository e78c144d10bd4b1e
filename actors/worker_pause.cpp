// A worker's pause for a checkpoint: at its next step boundary it asks its
// policy to quiesce (its pushes received by the shards), answers its state
// and waits for resume_atom. Also the defaults of comm_policy's optional
// hooks.

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "actors/checkpoint_state.hpp"
#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "actors/worker.hpp"
#include "messages/errors.hpp"

namespace troupe::actors {

using namespace messages;

caf::message_handler comm_policy::handlers(worker_context&) {
  return {};
}

double comm_policy::weight() const noexcept {
  return std::nan("");
}

void comm_policy::quiesce(worker_context&, std::function<void()> done) {
  done();
}

void comm_policy::save(optim::state_writer&, const std::string&) const {
  throw std::logic_error("this algorithm's workers cannot be checkpointed");
}

void comm_policy::load(const optim::state_reader&, const std::string&) {
  throw std::logic_error("this algorithm's workers cannot be restored");
}

std::optional<caf::error>
refuse_unless_boss(caf::stateful_actor<worker_state>* self, const char* verb) {
  const auto& boss = self->state.config.coordinator;
  if (detail::from_here(self) || (boss && detail::from_node(self, boss.node())))
    return std::nullopt;
  return detail::refuse(self, "worker " + std::to_string(self->state.config.id),
                        verb, "the coordinator's node");
}

bool worker_state::from_coordinator() noexcept {
  const auto& boss = config.coordinator;
  return actor
         && (detail::from_here(actor)
             || (boss && detail::from_node(actor, boss.node())));
}

bool worker_state::sent_by_peer(messages::worker_id r) const noexcept {
  if (peer_table.size() > 0)
    return actor && r < peer_table.size() && peer_table[r]
           && caf::actor_cast<caf::actor_addr>(actor->current_sender())
                  == peer_table[r].address();
  auto it = std::lower_bound(peer_ranks.begin(), peer_ranks.end(), r);
  if (!actor || it == peer_ranks.end() || *it != r)
    return false;
  const auto& p = peers[static_cast<std::size_t>(it - peer_ranks.begin())];
  return p
         && caf::actor_cast<caf::actor_addr>(actor->current_sender())
                == p.address();
}

std::string worker_state::peer_list_problem(const messages::peer_list_msg& m) {
  if (!from_coordinator())
    return "not sent from the coordinator's node";
  if (m.all.size() > 0) {
    if (!m.ranks.empty() || !m.handles.empty())
      return "a handle table and ranks at once";
    if (config.id >= m.all.size() || !actor
        || m.all[config.id].address() != actor->address())
      return "a handle table of " + std::to_string(m.all.size())
             + " workers without this worker at its rank";
    return {};
  }
  if (m.ranks.size() != m.handles.size())
    return std::to_string(m.ranks.size()) + " ranks but "
           + std::to_string(m.handles.size()) + " handles";
  for (std::size_t i = 0; i < m.ranks.size(); ++i) {
    if (i > 0 && m.ranks[i] <= m.ranks[i - 1])
      return "ranks not in increasing order";
    if (m.ranks[i] == config.id)
      return "its own rank among them";
  }
  return {};
}

void worker_state::take_peers(messages::peer_list_msg& m) {
  if (!policy || !peer_ranks.empty() || peer_table.size() > 0)
    return;
  if (auto why = peer_list_problem(m); !why.empty()) {
    detail::log().warn("worker {}: ignoring a peer list ({}): {}", config.id,
                       to_string(m), why);
    if (probe_)
      probe_->error();
    return;
  }
  if (m.all.size() > 0) {
    peer_table = std::move(m.all);
    policy->on_peer_table(*this, peer_table);
    return;
  }
  peer_ranks = std::move(m.ranks);
  peers = std::move(m.handles);
  for (auto& p : peers)
    if (p)
      actor->monitor(p);
  policy->on_peers(*this, peer_ranks, peers);
}

caf::message_handler
checkpoint_handlers(caf::stateful_actor<worker_state>* self) {
  return {
      [self](pause_atom) -> caf::result<std::string> {
        if (auto refused = refuse_unless_boss(self, "pause"))
          return *refused;
        auto& st = self->state;
        auto scope = on_message(st.probe_.get(), self, msg_type::other,
                                small_message_bytes);
        return st.request_pause();
      },
      [self](resume_atom) {
        if (refuse_unless_boss(self, "resume"))
          return;
        auto& st = self->state;
        auto scope = on_message(st.probe_.get(), self, msg_type::other,
                                small_message_bytes);
        st.resume();
      },
  };
}

caf::result<std::string> worker_state::request_pause() {
  auto who = "worker " + std::to_string(config.id);
  if (finished_)
    return make_error(errc::bad_request, who + ": finished, no pause");
  if (pause_reply || paused)
    return make_error(errc::bad_request, who + ": already pausing");
  auto p = actor->make_response_promise<std::string>();
  pause_reply = p;
  // Between two steps (or not started): pause now; the queued step_atom
  // finds the worker paused. Waiting for the policy (a fetch) before the
  // step's computation: pause now too, the step's rest waits for the
  // resume (nothing of the step is done: its state is the boundary's; a
  // replica refetches its parameters after a restore).
  if (!in_step || waiting_ready)
    hold_step();
  return p;
}

bool worker_state::hold_step() {
  if (paused)
    return true;
  if (!pause_reply)
    return false;
  if (policy && !policy->pause_here(*this))
    return false;
  paused = true;
  if (probe_)
    probe_->activity("paused");
  // The answer of this pause only: a resume may end it before the policy
  // quiesced, and a later pause must wait for its own quiesce.
  auto answer = [this, generation = ++pause_generation] {
    if (!pause_reply || generation != pause_generation)
      return;
    auto p = std::move(*pause_reply);
    pause_reply.reset();
    try {
      p.deliver(save_worker(*this));
    } catch (const std::exception& e) {
      p.deliver(
          make_error(errc::bad_request,
                     "worker " + std::to_string(config.id) + ": " + e.what()));
    }
  };
  if (policy)
    policy->quiesce(*this, answer);
  else
    answer();
  return true;
}

void worker_state::resume() {
  // The coordinator gave the checkpoint up (its pause request timed out)
  // before this worker reached its step boundary, or before its policy
  // quiesced (a flush to a lost shard waits out its timeout): the pause is
  // not answered, or its next step would pause again, and nobody would ever
  // resume it.
  if (pause_reply) {
    auto p = std::move(*pause_reply);
    pause_reply.reset();
    ++pause_generation;
    p.deliver(make_error(errc::bad_request,
                         "worker " + std::to_string(config.id)
                             + (paused ? ": resumed before its pause was done"
                                       : ": resumed before it paused")));
  }
  if (policy)
    policy->on_resume(*this);
  if (!paused)
    return;
  paused = false;
  if (probe_)
    probe_->activity("training");
  if (deferred) {
    auto rest = std::move(deferred);
    deferred = nullptr;
    rest();
    return;
  }
  if (started && !finished_ && !in_step)
    actor->send(actor, step_atom::value);
}

} // namespace troupe::actors
