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

void scheduler::configure(std::uint32_t nodes, network_options net,
                          compute_options compute) {
  if (nodes == 0)
    throw std::invalid_argument("a simulated cluster needs a node");
  links_ = std::make_unique<link_model>(net, nodes);
  compute_ = std::move(compute);
  cores_.assign(compute_.host_cores, {});
  broker_free_.assign(nodes, 0);
  straggle_state_.resize(nodes);
  for (std::uint32_t n = 0; n < nodes; ++n) {
    std::uint64_t s = compute_.seed ^ (0xa0761d6478bd642fULL * (n + 1));
    splitmix(s);
    straggle_state_[n] = s;
  }
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
        }
        stats_.payload_bytes += payload;
        ++stats_.remote;
        // Its node's broker serializes it (on a core) before it leaves:
        // CAF 0.17 encodes a remote message in its process's multiplexer
        // thread (middleman.workers = 0, net/system.cpp), which decodes
        // what arrives too, one message at a time; the sending actor goes
        // on meanwhile.
        if (auto ser = serialize_time(e.cpu_bytes); ser > 0) {
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
  if (r.queued || id == running_ || !r.has_work())
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
  r.busy_until = now_ns() + clock_.offset.count();
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

bool scheduler::run(const std::function<bool()>& done, std::uint64_t max_events,
                    std::chrono::nanoseconds wall) {
  loop_thread_ = std::this_thread::get_id();
  stop_reason_.clear();
  // The simulator itself may read the wall clock: its budget is real time.
  auto began = std::chrono::steady_clock::now();
  auto cmp = [](const event& a, const event& b) {
    return a.at != b.at ? a.at > b.at : a.seq > b.seq;
  };
  std::uint64_t spins = 0;
  for (;;) {
    take_foreign();
    if (done && done())
      return true;
    if (max_events != 0 && stats_.handled >= max_events) {
      stop_reason_ = "the simulation reached its cap of "
                     + std::to_string(max_events) + " events";
      return true;
    }
    if ((++spins & 1023) == 0
        && std::chrono::steady_clock::now() - began > wall) {
      stop_reason_ = "the simulation ran out of its real-time budget";
      return true;
    }
    if (!ready_.empty()) {
      auto id = ready_.front();
      ready_.pop_front();
      run_one(id);
      continue;
    }
    caf::actor_clock::time_point due;
    bool timer = clock_.next_due(due);
    nanos t_timer = timer ? due.time_since_epoch().count() - 1 : never;
    nanos t_event = events_.empty() ? never : events_.front().at;
    if (!timer && events_.empty()) {
      stop_reason_ = "nothing left to do";
      return false;
    }
    if (timer && t_timer <= t_event) {
      ++stats_.timers;
      fold(stats_.trace_hash, static_cast<std::uint64_t>(t_timer));
      clock_.trigger_timeout();
      continue;
    }
    std::pop_heap(events_.begin(), events_.end(), cmp);
    auto e = std::move(events_.back());
    events_.pop_back();
    if (e.at > now_ns())
      clock_.current_time = caf::actor_clock::time_point{
          caf::actor_clock::duration_type{e.at + 1}};
    if (e.crash >= 0)
      crash(static_cast<std::uint32_t>(e.crash));
    else if (e.depart)
      depart(std::move(e));
    else
      arrive(e);
  }
}

} // namespace troupe::sim
