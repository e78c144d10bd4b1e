#include "sim/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduled_actor.hpp>
#include <caf/send.hpp>
#include <caf/system_messages.hpp>

#include "messages/messages.hpp"
#include "sim/detail/scheduler_parts.hpp"

namespace troupe::sim {

using namespace detail;

class scheduler::unit : public caf::execution_unit {
public:
  unit(caf::actor_system* sys, scheduler* parent)
      : caf::execution_unit(sys), parent_(parent) {}
  void exec_later(caf::resumable* ptr) override {
    parent_->enqueue(ptr);
  }

private:
  scheduler* parent_;
};

bool scheduler::clock_type::next_due(time_point& t) const {
  if (schedule_.empty())
    return false;
  t = schedule_.begin()->first;
  return true;
}

scheduler::scheduler(caf::actor_system& sys)
    : caf::scheduler::test_coordinator(sys),
      unit_(std::make_unique<unit>(&sys, this)),
      loop_thread_(std::this_thread::get_id()) {
  configure(1, network_options{}, compute_options{});
}

scheduler::~scheduler() {
  for (auto& r : records_)
    r.clear();
}

void scheduler::install(caf::actor_system_config& cfg) {
  cfg.module_factories.push_back(
      [](caf::actor_system& sys) -> caf::actor_system::module* {
        return new scheduler(sys);
      });
}

scheduler& scheduler::of(caf::actor_system& sys) {
  auto* s = dynamic_cast<scheduler*>(&sys.scheduler());
  if (!s)
    throw std::logic_error("the actor system has no simulator scheduler");
  return *s;
}

namespace {

/// What a tensor sent by reference into a shared-memory segment takes in
/// the frame (docs/wire.md: pid, fd, nonce, offset, generation).
constexpr std::uint64_t shm_reference_bytes = 36;

/// Whether troupe sends this message's values through shared memory to
/// another process of its host: a push and a fetch's reply.
bool by_reference(const caf::type_erased_tuple& x) {
  return x.size() > 0
         && (x.match_element<messages::push_msg>(0)
             || x.match_element<messages::params_msg>(0));
}

/// A fetch's reply, whose values its sender copies into the segment.
bool is_reply_of_params(const caf::type_erased_tuple& x) {
  return x.size() > 0 && x.match_element<messages::params_msg>(0);
}

} // namespace

scheduler::record& scheduler::rec(caf::actor_id id) {
  if (id >= records_.size())
    records_.resize(id + 1);
  return records_[id];
}

std::uint32_t scheduler::node_of(caf::actor_id id) const noexcept {
  return id < records_.size() ? records_[id].node : 0;
}

nanos scheduler::now_ns() const noexcept {
  return clock_.current_time.time_since_epoch().count() - 1;
}

nanos scheduler::elapsed() const noexcept {
  return now_ns();
}

void scheduler::enqueue(caf::resumable* ptr) {
  if (std::this_thread::get_id() != loop_thread_) {
    // A signal handler's thread (stop requests): handled by the loop.
    std::lock_guard<std::mutex> guard{foreign_mtx_};
    foreign_.push_back(ptr);
    return;
  }
  notified(ptr);
}

void scheduler::take_foreign() {
  std::vector<caf::resumable*> xs;
  {
    std::lock_guard<std::mutex> guard{foreign_mtx_};
    if (foreign_.empty())
      return;
    xs.swap(foreign_);
  }
  for (auto* p : xs)
    notified(p);
}

void scheduler::notified(caf::resumable* ptr) {
  auto* a = dynamic_cast<caf::scheduled_actor*>(ptr);
  if (!a) {
    // Not an actor (nothing in troupe): run it to completion now.
    while (ptr->resume(unit_.get(), 1) == caf::resumable::resume_later) {
    }
    caf::intrusive_ptr_release(ptr);
    return;
  }
  auto id = a->id();
  auto& r = rec(id);
  if (!r.known) {
    r.known = true;
    r.actor = a;
    r.self = caf::strong_actor_ptr{a->ctrl()};
    r.node = running_ != 0 ? records_[running_].node : outside_node_;
    r.launch = true;
    ++stats_.actors;
  }
  sweep(a, r);
  caf::intrusive_ptr_release(a->ctrl());
  if (r.launch)
    make_ready(id, r);
}

void scheduler::sweep(caf::scheduled_actor* a, record& r) {
  auto& mb = a->mailbox();
  do {
    mb.fetch_more();
    auto& qs = mb.queue().queues();
    for (;;) {
      auto x
          = std::get<caf::scheduled_actor::urgent_queue_index>(qs).take_front();
      if (!x)
        x = std::get<caf::scheduled_actor::normal_queue_index>(qs).take_front();
      if (!x)
        break;
      auto from = x->sender ? x->sender->id() : caf::actor_id{0};
      auto at = now_ns();
      if (from != 0 && from == running_)
        at += clock_.offset.count();
      auto src = from != 0 ? node_of(from) : r.node;
      event e;
      e.sent = at;
      e.at = at;
      e.to = r.self ? r.self : caf::strong_actor_ptr{a->ctrl()};
      e.from = from;
      if (src != r.node) {
        auto size = measure(x->content(), &system());
        auto payload = payloads_.apply(size.payload);
        e.bytes = e.cpu_bytes = size.header + payload;
        if (compute_.shared_memory && by_reference(x->content())) {
          // A reference crosses the link; the values are copied once a
          // side (into the segment, out of it), not twice (into a frame
          // and the socket, out of the socket and the frame).
          e.bytes = size.header + shm_reference_bytes;
          e.cpu_bytes = size.header
                        + static_cast<std::uint64_t>(std::llround(
                            static_cast<double>(payload) * compute_.shm_share));
          if (compute_.first_touch_gbps > 0) {
            auto& used = touched_[{src, r.node}];
            auto seg = compute_.shm_segment_bytes;
            auto fresh
                = std::min<std::uint64_t>(payload, used < seg ? seg - used : 0);
            used += payload;
            e.touch = link_model::wire_time(fresh, compute_.first_touch_gbps);
          }
        }
        stats_.payload_bytes += payload;
        ++stats_.remote;
        if (shared_) { // encoded when it leaves (scheduler_sharing.cpp)
          e.msg = std::move(x);
          if (deferred(from))
            pending_.emplace_back(clock_.offset.count(), std::move(e));
          else
            leave(std::move(e));
          continue;
        }
        // Its node's broker serializes it (on a core) before it leaves:
        // CAF 0.17 encodes a remote message in its process's multiplexer
        // thread (middleman.workers = 0, net/system.cpp), which decodes
        // what arrives too, one message at a time; the sending actor goes
        // on meanwhile.
        auto ser = serialize_time(e.cpu_bytes) + e.touch;
        if (ser > 0 && compute_.reply_copy_in_handler && from == running_
            && compute_.shared_memory && is_reply_of_params(x->content())) {
          // The answering actor copies the values into the segment.
          auto end = on_core(at, ser);
          clock_.offset += clock_type::duration_type{end - at};
          stats_.serialize_ns += static_cast<std::uint64_t>(ser);
          at = e.sent = e.at = end;
        } else if (ser > 0) {
          at = e.sent = e.at = on_broker(src, at, ser);
        }
        // The network carries it when it leaves: a message computed into
        // the future does not hold the links before then.
        if (at > now_ns())
          e.depart = true;
        else
          e.at = links_->deliver(at, src, r.node, e.bytes);
      }
      e.msg = std::move(x);
      if (deferred(from))
        pending_.emplace_back(clock_.offset.count(), std::move(e));
      else
        push_event(std::move(e));
    }
  } while (!mb.try_block() && !mb.closed());
}

void scheduler::push_event(event e) {
  e.seq = seq_++;
  events_.push_back(std::move(e));
  std::push_heap(events_.begin(), events_.end(),
                 [](const event& a, const event& b) {
                   return a.at != b.at ? a.at > b.at : a.seq > b.seq;
                 });
}

void scheduler::make_ready(caf::actor_id id, record& r) {
  if (r.queued || id == running_ || !r.has_work() || r.computing)
    return;
  r.queued = true;
  if (r.busy_until > now_ns()) {
    event e;
    e.at = r.busy_until;
    e.to = r.self;
    push_event(std::move(e));
    return;
  }
  ready_.push_back(id);
}

bool scheduler::never_sent(const event& e) {
  if (e.from == 0)
    return false;
  auto src = node_of(e.from);
  if (src >= crashed_at_.size() || crashed_at_[src] >= e.sent)
    return false;
  ++stats_.dropped;
  return true;
}

void scheduler::depart(event e) {
  if (never_sent(e))
    return;
  auto src = node_of(e.from);
  e.depart = false;
  e.at = links_->deliver(e.sent, src, node_of(e.to->id()), e.bytes);
  push_event(std::move(e));
}

void scheduler::arrive(event& e) {
  auto id = e.to->id();
  auto& r = rec(id);
  if (!e.msg) { // a wake-up
    r.queued = false;
    make_ready(id, r);
    return;
  }
  if (never_sent(e) || decode(e))
    return;
  ++stats_.messages;
  fold(stats_.trace_hash, static_cast<std::uint64_t>(e.at));
  fold(stats_.trace_hash, e.from);
  fold(stats_.trace_hash, id);
  fold(stats_.trace_hash, e.bytes);
  if (r.done || !r.known) {
    // Gone (or never ours): its mailbox refuses and bounces requests.
    e.to->enqueue(std::move(e.msg), nullptr);
    return;
  }
  r.push(std::move(e.msg));
  make_ready(id, r);
}

void scheduler::run_one(caf::actor_id id) {
  auto& r = rec(id);
  r.queued = false;
  if (r.done || !r.has_work())
    return;
  if (r.busy_until > now_ns()) {
    make_ready(id, r);
    return;
  }
  std::size_t thread = 0;
  if (compute_.node_threads > 0 && !shared_) {
    // Its node's earliest free thread, once there is one.
    auto& th = threads_free_.at(r.node);
    if (th.empty())
      th.assign(compute_.node_threads, 0);
    thread = static_cast<std::size_t>(std::min_element(th.begin(), th.end())
                                      - th.begin());
    if (th[thread] > now_ns()) {
      r.queued = true;
      event e;
      e.at = th[thread];
      e.to = r.self;
      push_event(std::move(e));
      return;
    }
  }
  auto* a = r.actor;
  if (r.launch) {
    r.launch = false;
    a->mailbox().try_unblock();
  } else {
    auto x = r.pop();
    if (a->mailbox().closed()) {
      r.self->enqueue(std::move(x), nullptr);
      return;
    }
    a->mailbox().push_back(std::move(x));
  }
  auto keep = r.self; // the actor may drop its last handle to itself
  running_ = id;
  clock_.offset = clock_type::duration_type{0};
  ++stats_.handled;
  auto result = a->resume(unit_.get(), 1);
  if (result == caf::resumable::resume_later)
    sweep(a, r); // what it sent itself
  if (shared_)
    handler_over(id, r);
  else
    r.busy_until = now_ns() + clock_.offset.count();
  if (compute_.node_threads > 0 && !shared_ && r.busy_until > now_ns())
    threads_free_[r.node][thread] = r.busy_until;
  clock_.offset = clock_type::duration_type{0};
  running_ = 0;
  if (result == caf::resumable::done) {
    r.done = true;
    r.clear();
    r.self.reset();
    r.actor = nullptr;
    return;
  }
  make_ready(id, r);
}

} // namespace troupe::sim
