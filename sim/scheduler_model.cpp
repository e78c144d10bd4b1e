// The simulator's time model (what work costs) and its faults (crashes), and
// its end: parts of sim::scheduler (sim/scheduler.hpp).

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <caf/send.hpp>
#include <caf/system_messages.hpp>

#include "sim/detail/scheduler_parts.hpp"

namespace troupe::sim {

using namespace detail;

double lognormal_factor(double u1, double u2, double cv) noexcept {
  constexpr double two_pi = 6.283185307179586476925;
  double var = std::log1p(cv * cv);
  double z = std::sqrt(-2 * std::log(u1)) * std::cos(two_pi * u2);
  return std::exp(std::sqrt(var) * z - var / 2);
}

void scheduler::charge(const caf::local_actor* self, nanos d) {
  if (d <= 0 || self->id() != running_)
    return;
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
