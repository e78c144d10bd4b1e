#include "sim/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/detail/serialized_size.hpp>
#include <caf/scheduled_actor.hpp>
#include <caf/send.hpp>
#include <caf/system_messages.hpp>

namespace troupe::sim {

namespace {

std::uint64_t splitmix(std::uint64_t& s) noexcept {
  auto z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void fold(std::uint64_t& h, std::uint64_t x) noexcept {
  for (int i = 0; i < 8; ++i) {
    h ^= (x >> (8 * i)) & 0xff;
    h *= 0x100000001b3ULL;
  }
}

constexpr nanos never = std::numeric_limits<nanos>::max();

} // namespace

/// A FIFO of messages an actor is due to handle, chained through the
/// elements' own links.
struct scheduler::record {
  caf::strong_actor_ptr self; ///< held until the actor is done
  caf::scheduled_actor* actor = nullptr;
  caf::mailbox_element* head = nullptr;
  caf::mailbox_element* tail = nullptr;
  nanos busy_until = 0;
  std::uint32_t node = 0;
  bool known = false;
  bool queued = false; ///< in the ready list or waiting to wake
  bool launch = false; ///< not started yet
  bool done = false;

  bool has_work() const noexcept {
    return launch || head != nullptr;
  }
  void push(caf::mailbox_element_ptr x) noexcept {
    auto* p = x.release();
    p->next = nullptr;
    if (tail)
      tail->next = p;
    else
      head = p;
    tail = p;
  }
  void push_front(caf::mailbox_element_ptr x) noexcept {
    auto* p = x.release();
    p->next = head;
    head = p;
    if (!tail)
      tail = p;
  }
  caf::mailbox_element_ptr pop() noexcept {
    auto* p = head;
    head = static_cast<caf::mailbox_element*>(p->next);
    if (!head)
      tail = nullptr;
    p->next = nullptr;
    return caf::mailbox_element_ptr{p};
  }
  void clear() noexcept {
    while (head)
      pop();
  }
};

struct scheduler::event {
  nanos at = 0;
  std::uint64_t seq = 0;
  caf::strong_actor_ptr to;
  caf::mailbox_element_ptr msg; ///< null: a wake-up
  caf::actor_id from = 0;
  std::uint64_t bytes = 0;
  std::int64_t crash = -1; ///< a node that crashes (no `to`, no `msg`)
  nanos sent = 0;          ///< when it left its sender
  bool depart = false;     ///< due to leave its node at `at` (= `sent`)
};

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
  straggle_state_.resize(nodes);
  for (std::uint32_t n = 0; n < nodes; ++n) {
    std::uint64_t s = compute_.seed ^ (0xa0761d6478bd642fULL * (n + 1));
    splitmix(s);
    straggle_state_[n] = s;
  }
}

scheduler::record& scheduler::rec(caf::actor_id id) {
  if (id >= records_.size())
    records_.resize(id + 1);
  return records_[id];
}

scheduler::record* scheduler::find(caf::actor_id id) noexcept {
  return id < records_.size() ? &records_[id] : nullptr;
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
        caf::detail::serialized_size_inspector f{system()};
        e.bytes = x->content().save(f) ? 64 : f.result();
        ++stats_.remote;
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

void scheduler::depart(event e) {
  auto src = node_of(e.from);
  if (src < crashed_at_.size() && crashed_at_[src] < e.sent) {
    ++stats_.dropped; // its node crashed while computing it
    return;
  }
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
  if (e.from != 0) {
    // Sent after its node crashed (computed past the crash): never sent.
    auto src = node_of(e.from);
    if (src < crashed_at_.size() && crashed_at_[src] < e.sent) {
      ++stats_.dropped;
      return;
    }
  }
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

void scheduler::charge(const caf::local_actor* self, nanos d) {
  if (d <= 0 || self->id() != running_)
    return;
  clock_.offset += clock_type::duration_type{d};
  stats_.compute_ns += static_cast<std::uint64_t>(d);
}

void scheduler::compute(const caf::local_actor* self, actors::work_kind kind,
                        std::uint64_t samples, double share) {
  auto node = node_of(self->id());
  double s = (kind == actors::work_kind::update ? compute_.value_seconds
                                                : compute_.sample_seconds)
             * static_cast<double>(samples) * share;
  if (kind == actors::work_kind::forward)
    s *= compute_.forward_share;
  if (node < compute_.slowdown.size())
    s *= compute_.slowdown[node];
  if ((kind == actors::work_kind::step || kind == actors::work_kind::stage)
      && compute_.straggle_p > 0 && node < straggle_state_.size()) {
    auto u = static_cast<double>(splitmix(straggle_state_[node]) >> 11)
             * 0x1.0p-53;
    if (u < compute_.straggle_p) {
      s *= compute_.straggle_factor;
      ++stats_.straggles;
    }
  }
  charge(self, static_cast<nanos>(std::llround(s * 1e9)));
}

void scheduler::busy(const caf::local_actor* self, std::chrono::nanoseconds d) {
  charge(self, d.count());
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

void scheduler::shutdown() {
  for (auto& r : records_)
    if (r.known && !r.done && r.self)
      caf::anon_send_exit(r.self, caf::exit_reason::kill);
  run({}, 0, std::chrono::seconds{60});
}

void scheduler::crash_at(nanos at, std::uint32_t node) {
  if (node >= nodes())
    throw std::invalid_argument("no node " + std::to_string(node)
                                + " to crash: the cluster has "
                                + std::to_string(nodes()));
  event e;
  e.at = std::max<nanos>(at, now_ns());
  e.crash = node;
  push_event(std::move(e));
}

void scheduler::crash(std::uint32_t node) {
  auto now = now_ns();
  crashed_.emplace_back(node, now);
  if (crashed_at_.size() < nodes())
    crashed_at_.resize(nodes(), never);
  crashed_at_[node] = std::min(crashed_at_[node], now);
  fold(stats_.trace_hash, 0xdeadULL + node);
  // Its actors die now, in the middle of a computation too: the kill goes
  // first, and the rest of their work is not done.
  for (caf::actor_id id = 0; id < records_.size(); ++id) {
    auto& r = records_[id];
    if (!r.known || r.done || !r.self || r.node != node)
      continue;
    r.push_front(caf::make_mailbox_element(
        nullptr, caf::make_message_id(caf::message_priority::high), {},
        caf::exit_msg{caf::actor_cast<caf::actor_addr>(r.self),
                      caf::exit_reason::kill}));
    r.busy_until = std::min(r.busy_until, now);
    // Ready now, even if it was waiting to wake (that wake-up finds it
    // done).
    r.queued = false;
    make_ready(id, r);
  }
}

void scheduler::stop() {
  events_.clear();
  ready_.clear();
  for (auto& r : records_) {
    r.clear();
    r.self.reset();
  }
}

} // namespace troupe::sim
