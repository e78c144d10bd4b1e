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

#include "optim/replica.hpp"

namespace troupe::optim {

class momentum_replica final : public replica {
public:
  /// Throws std::invalid_argument unless 0 < beta < 1.
  momentum_replica(std::unique_ptr<replica> inner, double beta);

  std::size_t size() const noexcept override {
    return inner_->size();
  }
  float* params() noexcept override {
    return inner_->params();
  }
  float* grads() noexcept override {
    return inner_->grads();
  }
  /// The inner replica's gradient g, then grads() = m = beta m + (1 - beta) g
  /// (m starts at the first gradient).
  step_result compute() override;
  std::size_t batches_per_epoch() const noexcept override {
    return inner_->batches_per_epoch();
  }
  std::size_t epoch() const noexcept override {
    return inner_->epoch();
  }
  std::size_t add_examples(const std::vector<std::size_t>& indices) override {
    return inner_->add_examples(indices);
  }
  std::vector<std::size_t> cede_examples(std::uint32_t num,
                                         std::uint32_t den) override {
    return inner_->cede_examples(num, den);
  }
  bool flip_labels(std::int32_t classes) override {
    return inner_->flip_labels(classes);
  }
  /// The inner replica's state and the momentum buffer (prefix + "momentum").
  void save_state(state_writer& w, const std::string& prefix) const override;
  void load_state(const state_reader& r, const std::string& prefix) override;

private:
  std::unique_ptr<replica> inner_;
  double beta_;
  std::vector<float> m_;
};

} // namespace troupe::optim
