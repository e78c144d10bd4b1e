#include "optim/worker_momentum.hpp"

#include <stdexcept>

#include "optim/state_file.hpp"

namespace troupe::optim {

momentum_replica::momentum_replica(std::unique_ptr<replica> inner, double beta)
    : replica_wrapper(std::move(inner)), beta_(beta) {
  if (!(beta > 0 && beta < 1))
    throw std::invalid_argument("--worker-momentum must be in (0, 1)");
}

step_result momentum_replica::compute() {
  auto r = inner_->compute();
  auto n = size();
  float* g = grads();
  if (m_.size() != n) {
    m_.assign(g, g + n);
    return r;
  }
  auto b = static_cast<float>(beta_), a = static_cast<float>(1 - beta_);
  for (std::size_t i = 0; i < n; ++i) {
    m_[i] = b * m_[i] + a * g[i];
    g[i] = m_[i];
  }
  return r;
}

void momentum_replica::save_state(state_writer& w,
                                  const std::string& prefix) const {
  inner_->save_state(w, prefix);
  w.put(prefix + "momentum", m_);
}

void momentum_replica::load_state(const state_reader& r,
                                  const std::string& prefix) {
  inner_->load_state(r, prefix);
  auto m = r.f32(prefix + "momentum");
  if (!m.empty() && m.size() != size())
    throw r.error(prefix + "momentum", "not one value per parameter");
  m_ = std::move(m);
}

} // namespace troupe::optim
