// The worker's handlers of other roles' messages: LSGD's lead and pull,
// ShadowSync's corrections.

#include <cmath>

#include <caf/actor_cast.hpp>

#include "actors/detail/log.hpp"
#include "actors/worker.hpp"
#include "optim/consensus.hpp"

namespace troupe::actors {

using namespace messages;

namespace detail {

/// LSGD, as the elected leader: sends the parameters to every target.
void lead(worker_state& st, const lead_msg& m) {
  auto& rep = *st.replica_;
  pull_msg p;
  p.round = m.round;
  p.global = m.global;
  p.leader = st.config.id;
  p.lambda = m.lambda;
  p.values = tensor{rep.params(), rep.size()};
  auto bytes = wire_size(p);
  for (auto& t : m.targets) {
    if (!t || t == caf::actor_cast<caf::actor>(st.actor))
      continue;
    st.count_sent(msg_type::pull, bytes);
    // Every target gets a copy of the same snapshot.
    st.actor->send(caf::actor_cast<worker_actor>(t), p);
  }
  if (st.probe_)
    st.probe_->gauge("leads", static_cast<double>(++st.leads));
}

/// LSGD: x <- x - lambda * (x - leader); a leader never pulls toward itself.
void pull(worker_state& st, const pull_msg& m) {
  if (st.finished_ || !st.replica_ || m.leader == st.config.id)
    return;
  auto& rep = *st.replica_;
  if (m.values.size() != rep.size() || !(m.lambda >= 0 && m.lambda <= 1)) {
    detail::log().warn("worker {}: ignoring a pull from worker {} with {} "
                       "values and lambda {} (the replica has {})",
                       st.config.id, m.leader, m.values.size(), m.lambda,
                       rep.size());
    if (st.probe_)
      st.probe_->error();
    return;
  }
  auto d = optim::distance(rep.params(), m.values.data(), rep.size());
  if (!std::isfinite(d)) {
    detail::log().warn("worker {}: ignoring a non-finite pull from worker {}",
                       st.config.id, m.leader);
    if (st.probe_)
      st.probe_->error();
    return;
  }
  optim::pull_toward(rep.params(), m.values.data(), m.lambda, rep.size());
  ++st.counters.pulls;
  st.counters.pull_distance.value += d;
  if (st.probe_) {
    st.probe_->gauge("pull_distance", d);
    st.probe_->gauge("pulls", static_cast<double>(st.counters.pulls));
  }
}

/// ShadowSync: x <- x + delta (a syncer's correction); refused if the size
/// is wrong or a value is not finite.
void apply_delta(worker_state& st, const delta_msg& m) {
  if (!st.replica_)
    return;
  auto& rep = *st.replica_;
  const float* d = m.values.data();
  bool finite = m.values.size() == rep.size();
  for (std::size_t i = 0; finite && i < m.values.size(); ++i)
    finite = std::isfinite(d[i]);
  if (!finite) {
    detail::log().warn("worker {}: ignoring a correction of round {} with {} "
                       "values (the replica has {}) or non-finite values",
                       st.config.id, m.round, m.values.size(), rep.size());
    if (st.probe_)
      st.probe_->error();
    return;
  }
  float* x = rep.params();
  for (std::size_t i = 0; i < rep.size(); ++i)
    x[i] += d[i];
  st.count_mix();
}

} // namespace detail

} // namespace troupe::actors
