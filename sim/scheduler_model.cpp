// The simulator's time model (what work costs), its event loop, its faults
// (crashes) and its end: parts of sim::scheduler (sim/scheduler.hpp).

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include <caf/send.hpp>
#include <caf/system_messages.hpp>

#include "sim/detail/scheduler_parts.hpp"

namespace troupe::sim {

using namespace detail;

void scheduler::configure(std::uint32_t nodes, network_options net,
                          compute_options compute) {
  if (nodes == 0)
    throw std::invalid_argument("a simulated cluster needs a node");
  links_ = std::make_unique<link_model>(net, nodes);
  compute_ = std::move(compute);
  cores_.assign(compute_.host_cores, {});
  broker_free_.assign(nodes, 0);
  threads_free_.assign(compute_.node_threads > 0 ? nodes : 0, {});
  touched_.clear();
  shared_.reset();
  if (compute_.host_cores > 0 && compute_.fair_share)
    shared_ = std::make_unique<shared_cores>(compute_.host_cores);
  shared_work_.clear();
  broker_queue_.clear();
  broker_queue_.resize(nodes);
  straggle_state_.resize(nodes);
  for (std::uint32_t n = 0; n < nodes; ++n) {
    std::uint64_t s = compute_.seed ^ (0xa0761d6478bd642fULL * (n + 1));
    splitmix(s);
    straggle_state_[n] = s;
  }
}

double lognormal_factor(double u1, double u2, double cv) noexcept {
  constexpr double two_pi = 6.283185307179586476925;
  double var = std::log1p(cv * cv);
  double z = std::sqrt(-2 * std::log(u1)) * std::cos(two_pi * u2);
  return std::exp(std::sqrt(var) * z - var / 2);
}

void scheduler::charge(const caf::local_actor* self, nanos d) {
  if (d <= 0 || self->id() != running_)
    return;
  if (shared_) { // on the cores when the handler is over
    clock_.offset += clock_type::duration_type{d};
    stats_.compute_ns += static_cast<std::uint64_t>(d);
    return;
  }
  auto t = now_ns() + clock_.offset.count();
  clock_.offset += clock_type::duration_type{on_core(t, d) - t};
  stats_.compute_ns += static_cast<std::uint64_t>(d);
}

nanos scheduler::on_core(nanos t, nanos d) {
  if (cores_.empty() || d <= 0)
    return t + d;
  // The earliest start at or after t at which some core is free for d (the
  // first such core): work given out of time order (a message's
  // deserialization when it arrives, a send after compute) leaves gaps that
  // later work may fill. No preemption. Intervals over before now are gone:
  // no work starts before now.
  auto now = now_ns();
  nanos best = never;
  std::size_t best_core = 0, best_at = 0;
  for (std::size_t c = 0; c < cores_.size(); ++c) {
    auto& busy = cores_[c];
    std::size_t gone = 0;
    while (gone < busy.size() && busy[gone].second <= now)
      ++gone;
    busy.erase(busy.begin(), busy.begin() + static_cast<std::ptrdiff_t>(gone));
    auto start = t;
    std::size_t i = 0;
    for (; i < busy.size(); ++i) {
      if (busy[i].second <= start)
        continue;
      if (busy[i].first >= start + d)
        break;
      start = busy[i].second;
    }
    if (start < best) {
      best = start;
      best_core = c;
      best_at = i;
    }
  }
  auto& busy = cores_[best_core];
  busy.insert(busy.begin() + static_cast<std::ptrdiff_t>(best_at),
              {best, best + d});
  stats_.core_wait_ns += static_cast<std::uint64_t>(best - t);
  return best + d;
}

nanos scheduler::serialize_time(std::uint64_t bytes) const noexcept {
  return compute_.serialize_gbps > 0
             ? link_model::wire_time(bytes, compute_.serialize_gbps)
             : 0;
}

nanos scheduler::on_broker(std::uint32_t node, nanos at, nanos d) {
  auto end = on_core(std::max(at, broker_free_.at(node)), d);
  broker_free_[node] = end;
  stats_.serialize_ns += static_cast<std::uint64_t>(d);
  return end;
}

bool scheduler::decode(event& e) {
  auto d = e.decoded ? 0 : serialize_time(e.cpu_bytes);
  if (d <= 0)
    return false;
  // The node's broker takes its messages one at a time, each on a core.
  if (shared_) {
    stats_.serialize_ns += static_cast<std::uint64_t>(d);
    auto node = node_of(e.to->id()); // before e moves
    to_broker(node, d, std::move(e), false);
    return true;
  }
  e.decoded = true;
  e.at = on_broker(node_of(e.to->id()), now_ns(), d);
  push_event(std::move(e));
  return true;
}

void scheduler::compute(const caf::local_actor* self, actors::work_kind kind,
                        std::uint64_t samples, double share) {
  auto node = node_of(self->id());
  double s = (kind == actors::work_kind::update ? compute_.value_seconds
                                                : compute_.sample_seconds)
             * static_cast<double>(samples) * share;
  if (kind == actors::work_kind::forward)
    s = compute_.eval_seconds >= 0 ? compute_.eval_seconds
                                   : s * compute_.forward_share;
  else if (kind == actors::work_kind::update)
    s *= compute_.update_scale;
  if (node < compute_.slowdown.size())
    s *= compute_.slowdown[node];
  if ((kind == actors::work_kind::step || kind == actors::work_kind::stage)
      && node < straggle_state_.size()) {
    // The node's draws: the straggle's, then the jitter's two.
    auto& state = straggle_state_[node];
    auto uniform = [&state] { // [0, 1): the top 53 bits over 2^53
      return static_cast<double>(splitmix(state) >> 11) * 0x1.0p-53;
    };
    if (compute_.straggle_p > 0 && uniform() < compute_.straggle_p) {
      s *= compute_.straggle_factor;
      ++stats_.straggles;
    }
    if (compute_.jitter > 0) {
      double u1 = 1 - uniform(); // (0, 1]: the logarithm's argument
      s *= lognormal_factor(u1, uniform(), compute_.jitter);
    }
  }
  charge(self, static_cast<nanos>(std::llround(s * 1e9)));
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
    nanos t_shared = shared_ ? shared_->next() : never;
    if (!timer && events_.empty() && t_shared == never) {
      stop_reason_ = "nothing left to do";
      return false;
    }
    if (timer && t_timer <= std::min(t_event, t_shared)) {
      ++stats_.timers;
      fold(stats_.trace_hash, static_cast<std::uint64_t>(t_timer));
      clock_.trigger_timeout();
      continue;
    }
    if (t_shared <= t_event) {
      if (t_shared > now_ns())
        clock_.current_time = caf::actor_clock::time_point{
            caf::actor_clock::duration_type{t_shared + 1}};
      shared_until(t_shared);
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

void scheduler::busy(const caf::local_actor* self, std::chrono::nanoseconds d) {
  charge(self, d.count());
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
  drop_shared(node);
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
  pending_.clear();
  shared_work_.clear();
  for (auto& q : broker_queue_)
    q.clear();
  for (auto& r : records_) {
    r.clear();
    r.self.reset();
  }
}

} // namespace troupe::sim
