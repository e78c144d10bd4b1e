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
