// A replica that computes through another one and changes what it computes
// (optim/attack.hpp's attacker, optim/worker_momentum.hpp's momentum): every
// call is forwarded to the inner replica unless the wrapper overrides it.
// No CAF.

#pragma once

#include <memory>
#include <string>
#include <vector>

#include "optim/replica.hpp"

namespace troupe::optim {

class replica_wrapper : public replica {
public:
  explicit replica_wrapper(std::unique_ptr<replica> inner)
      : inner_(std::move(inner)) {}

  std::size_t size() const noexcept override {
    return inner_->size();
  }
  float* params() noexcept override {
    return inner_->params();
  }
  float* grads() noexcept override {
    return inner_->grads();
  }
  step_result compute() override {
    return inner_->compute();
  }
  /// The inner replica's pass: a wrapper that changes the gradient after
  /// it (momentum, attacks) overrides this with none.
  pass_view last_pass() const noexcept override {
    return inner_->last_pass();
  }
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
  void save_state(state_writer& w, const std::string& prefix) const override {
    inner_->save_state(w, prefix);
  }
  void load_state(const state_reader& r, const std::string& prefix) override {
    inner_->load_state(r, prefix);
  }
  bool flip_labels(std::int32_t classes) override {
    return inner_->flip_labels(classes);
  }
  bool byzantine() const noexcept override {
    return inner_->byzantine();
  }

protected:
  std::unique_ptr<replica> inner_;
};

} // namespace troupe::optim
