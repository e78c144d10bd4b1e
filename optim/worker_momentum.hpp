// Worker momentum (issue [15]): a worker sends m_t = beta * m_{t-1} +
// (1 - beta) * g_t instead of its gradient g_t, as a replica that wraps the
// honest one. Robust rules work better on momentum than on raw stochastic
// gradients (Karimireddy, He, Jaggi, "Learning from History for Byzantine
// Robust Optimization", ICML 2021: centered clipping is proven with it):
// the honest vectors' spread shrinks by about sqrt((1 - beta) / (1 + beta))
// while an attacker's does not. The buffer is part of the replica's
// checkpointed state. No CAF.

#pragma once

#include <memory>
#include <vector>

#include "optim/replica_wrapper.hpp"

namespace troupe::optim {

class momentum_replica final : public replica_wrapper {
public:
  /// Its gradient is not the model's pass's: no sufficient factors.
  pass_view last_pass() const noexcept override {
    return {};
  }
  /// Throws std::invalid_argument unless 0 < beta < 1.
  momentum_replica(std::unique_ptr<replica> inner, double beta);

  /// The inner replica's gradient g, then grads() = m = beta m + (1 - beta) g
  /// (m starts at the first gradient).
  step_result compute() override;
  /// The inner replica's state and the momentum buffer (prefix + "momentum").
  void save_state(state_writer& w, const std::string& prefix) const override;
  void load_state(const state_reader& r, const std::string& prefix) override;

private:
  double beta_;
  std::vector<float> m_;
};

} // namespace troupe::optim
