// Fair sharing of a host's cores (compute_options::fair_share): part of
// sim::scheduler (sim/scheduler.hpp). A handler runs at once, as always; its
// reported compute becomes a task on the host's shared cores (shared_cores),
// and what it sent after part of that compute waits for that part to be done
// there. A node's broker (de)serializes one message at a time, each a task on
// the same cores. So the end of a piece of work is known when it comes, not
// when it is given out: the work given out after it may slow it down.

#include <algorithm>

#include "sim/detail/scheduler_parts.hpp"

namespace troupe::sim {

using namespace detail;

bool scheduler::deferred(caf::actor_id from) const noexcept {
  return shared_ && from != 0 && from == running_ && clock_.offset.count() > 0;
}

void scheduler::leave(event e) {
  auto src = node_of(e.from);
  if (auto ser = serialize_time(e.cpu_bytes) + e.touch; ser > 0) {
    stats_.serialize_ns += static_cast<std::uint64_t>(ser);
    to_broker(src, ser, std::move(e), true);
    return;
  }
  e.at = links_->deliver(e.sent, src, node_of(e.to->id()), e.bytes);
  push_event(std::move(e));
}

void scheduler::to_broker(std::uint32_t node, nanos work, event e,
                          bool encode) {
  auto& q = broker_queue_.at(node);
  q.push_back(broker_job{work, std::move(e), encode});
  if (q.size() == 1) {
    shared_work w;
    w.node = node;
    shared_work_.emplace(shared_->add(now_ns(), work), std::move(w));
  }
}

void scheduler::handler_over(caf::actor_id id, record& r) {
  auto work = clock_.offset.count();
  if (work <= 0) {
    r.busy_until = now_ns();
    return;
  }
  std::vector<nanos> marks;
  for (auto& p : pending_)
    if (marks.empty() || marks.back() != p.first)
      marks.push_back(p.first);
  shared_work w;
  w.actor = id;
  w.node = r.node;
  w.sends = std::move(pending_);
  pending_.clear();
  shared_work_.emplace(shared_->add(now_ns(), work, std::move(marks)),
                       std::move(w));
  r.computing = true;
}

void scheduler::shared_until(nanos t) {
  std::vector<shared_cores::reached> reached;
  shared_->advance(t, reached);
  stats_.core_wait_ns = shared_->waited_ns();
  for (auto& x : reached) {
    auto it = shared_work_.find(x.task);
    if (it == shared_work_.end())
      continue;
    auto& w = it->second;
    if (w.actor == 0) { // a broker's message: (de)serialized
      auto node = w.node;
      shared_work_.erase(it);
      auto& q = broker_queue_.at(node);
      auto job = std::move(q.front());
      q.pop_front();
      auto e = std::move(job.msg);
      e.sent = job.encode ? t : e.sent;
      e.decoded = !job.encode;
      e.at = job.encode ? links_->deliver(t, node, node_of(e.to->id()), e.bytes)
                        : t;
      push_event(std::move(e));
      if (!q.empty()) { // its next message
        shared_work next;
        next.node = node;
        shared_work_.emplace(shared_->add(t, q.front().work), std::move(next));
      }
      continue;
    }
    // A handler's sends due by now leave now.
    for (;
         w.released < w.sends.size() && w.sends[w.released].first <= x.at_work;
         ++w.released) {
      auto e = std::move(w.sends[w.released].second);
      e.sent = e.at = t;
      if (node_of(e.from) != node_of(e.to->id()))
        leave(std::move(e));
      else
        push_event(std::move(e));
    }
    if (!x.last)
      continue;
    auto id = w.actor;
    shared_work_.erase(it);
    auto& r = rec(id);
    r.computing = false;
    r.busy_until = t;
    if (!r.done)
      make_ready(id, r);
  }
}

void scheduler::drop_shared(std::uint32_t node) {
  if (!shared_)
    return;
  auto now = now_ns();
  for (auto it = shared_work_.begin(); it != shared_work_.end();) {
    if (it->second.node != node) {
      ++it;
      continue;
    }
    shared_->remove(now, it->first);
    if (it->second.actor != 0)
      rec(it->second.actor).computing = false; // its sends die with it
    it = shared_work_.erase(it);
  }
  // What its broker had not encoded never left; what it had not decoded
  // reaches its dead actors now (whose mailboxes bounce requests).
  auto q = std::move(broker_queue_.at(node));
  broker_queue_[node].clear();
  for (auto& job : q) {
    if (job.encode) {
      ++stats_.dropped;
      continue;
    }
    job.msg.decoded = true;
    job.msg.at = now;
    push_event(std::move(job.msg));
  }
}

} // namespace troupe::sim
