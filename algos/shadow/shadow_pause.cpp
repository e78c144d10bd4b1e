// A shadow syncer in a checkpoint (shadow_run.cpp drives it). The syncers
// run rounds on their own timers and exchange sums, so a checkpoint is a
// cut after a common round: every syncer is asked to start no new round
// and answers its round (the one under way or the last); then each is told
// the latest of those, runs its rounds up to it (starting them at once;
// S-EASGD's syncers, which exchange nothing with each other, only end their
// own), and answers once its members and shards have received what it sent
// (a flush: CAF delivers one sender's messages in order). The syncers then
// hold the same round, nothing of theirs is in flight, and no round starts
// until the resume.

#include <algorithm>
#include <limits>
#include <memory>

#include "actors/detail/caller.hpp"
#include "actors/detail/log.hpp"
#include "algos/shadow/detail/shadow_ops.hpp"
#include "algos/shadow/shadow_state.hpp"
#include "messages/errors.hpp"

namespace troupe::algos::detail {

using namespace messages;

namespace {

std::string who(const shadow_syncer_state& st) {
  return "shadow syncer " + std::to_string(st.config.index);
}

/// Round drain_to is over: every member answers a flush (its corrections
/// are applied), S-EASGD's shards too (the center's pushes are applied),
/// then the drain is answered, or fails naming who did not answer.
void flush(syncer_ptr self) {
  auto& st = self->state;
  struct pending {
    std::size_t left = 1; // this function's own, settled last
    std::string error;
  };
  auto p = std::make_shared<pending>();
  auto settle = [self, p] {
    if (--p->left > 0)
      return;
    auto& st = self->state;
    if (!st.drained)
      return; // resumed meanwhile
    if (p->error.empty())
      st.drained->deliver(ack_atom::value);
    else
      st.drained->deliver(caf::make_error(errc::role_lost, p->error));
    st.drained.reset();
    st.probe->activity("paused");
  };
  auto failed = [self, p, settle](std::string what, const caf::error& err) {
    if (p->error.empty())
      p->error = who(self->state) + ": " + what
                 + " did not answer its flush: " + self->system().render(err);
    settle();
  };
  fetch_msg none{std::numeric_limits<worker_id>::max(), 0, 0, 0};
  for (std::size_t i = 0; i < st.config.members.size(); ++i) {
    if (!st.member_live[i])
      continue;
    ++p->left;
    auto id = i < st.config.ids.size() ? st.config.ids[i] : i;
    self->request(st.config.members[i], st.config.timeout, none)
        .then([settle](params_msg&) { settle(); },
              [failed, id](caf::error& err) {
                failed("worker " + std::to_string(id), err);
              });
  }
  st.flush_waits.assign(st.config.shards.size(), nullptr);
  for (std::size_t k = 0; k < st.config.shards.size(); ++k) {
    ++p->left;
    // Settled once: by the answer, the error, or the shard's restoration
    // (rebind_center: a lost shard's node may never answer, when this
    // node reached it through the coordinator's).
    auto answered = std::make_shared<bool>(false);
    auto once = [self, answered, k](auto then) {
      if (*answered)
        return;
      *answered = true;
      auto& waits = self->state.flush_waits;
      if (k < waits.size())
        waits[k] = nullptr;
      then();
    };
    st.flush_waits[k] = [once, settle] { once(settle); };
    self->request(st.config.shards[k].handle, st.config.timeout,
                  flush_atom::value)
        .then([once, settle](std::uint64_t) { once(settle); },
              [once, failed, k](caf::error& err) {
                once([&] { failed("shard " + std::to_string(k), err); });
              });
  }
  settle();
}

} // namespace

caf::result<std::uint64_t> pause(syncer_ptr self) {
  auto& st = self->state;
  if (!from_owner(self))
    return actors::detail::refuse(self, who(st), "pause",
                                  "the coordinator's node");
  st.paused = true;
  st.drain_to = 0;
  st.probe->activity(st.in_round ? "pausing" : "paused");
  return st.round;
}

caf::result<ack_atom> drain(syncer_ptr self, std::uint64_t r) {
  auto& st = self->state;
  if (!from_owner(self))
    return actors::detail::refuse(self, who(st), "drain",
                                  "the coordinator's node");
  if (!st.paused)
    return caf::make_error(errc::bad_request, who(st) + ": not paused");
  if (st.drained)
    return caf::make_error(errc::bad_request, who(st) + ": already draining");
  // S-EASGD's syncers exchange nothing with each other: each ends its own.
  st.drain_to = st.config.shards.empty() ? std::max(r, st.round) : st.round;
  auto promise = self->make_response_promise<ack_atom>();
  st.drained = promise;
  if (st.in_round)
    return promise; // end_round goes on (after_round_paused)
  if (st.round < st.drain_to)
    start_round(self);
  else
    flush(self);
  return promise;
}

void after_round_paused(syncer_ptr self) {
  auto& st = self->state;
  if (st.round < st.drain_to)
    start_round(self);
  else if (st.drained)
    flush(self);
}

caf::result<std::string> save(syncer_ptr self) {
  auto& st = self->state;
  if (!from_owner(self))
    return actors::detail::refuse(self, who(st), "save",
                                  "the coordinator's node");
  if (!st.paused || st.in_round || st.drained)
    return caf::make_error(errc::bad_request,
                           who(st) + ": not paused between two rounds");
  return encode(saved_of(st));
}

bool from_owner(syncer_ptr self) {
  return actors::detail::from_here(self)
         || actors::detail::from_node(self, self->state.config.owner);
}

void resume(syncer_ptr self) {
  auto& st = self->state;
  if (!from_owner(self) || !st.paused) {
    if (!from_owner(self))
      actors::detail::refuse(self, who(st), "resume", "the coordinator's node");
    return;
  }
  st.paused = false;
  st.drain_to = 0;
  if (st.drained) { // the drain's requester gave up
    st.drained->deliver(caf::make_error(errc::bad_request,
                                        who(st) + ": resumed before drained"));
    st.drained.reset();
  }
  st.probe->activity(st.in_round ? "in a round" : "between rounds");
  if (!st.in_round && !st.timer)
    next_round(self);
}

} // namespace troupe::algos::detail
