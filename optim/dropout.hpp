#pragma once

#include <string>

#include "optim/layer.hpp"

namespace troupe::optim {

/// Dropout (inverted, as PyTorch's): in a training or calibration pass each
/// value is kept with probability 1 - p and scaled by 1 / (1 - p), else set
/// to 0; for inference it is the identity. Works in either layout, keeps the
/// shape, has no parameters. The masks come from the layer's own generator
/// (`seed_noise`; `init` seeds it from the model's seed), so the same seeds
/// give the same masks.
template <class T>
class dropout : public layer<T> {
public:
  /// Throws std::invalid_argument unless 0 <= p < 1.
  explicit dropout(double p);

  std::string kind() const override {
    return "dropout";
  }

  double probability() const noexcept {
    return p_;
  }

  shape setup(const shape& in) override;

  void init(rng& gen) override {
    gen_ = rng{gen.next()};
  }

  void seed_noise(std::uint64_t seed) override {
    gen_ = rng{seed};
  }

  void set_pass(optim::pass p) override {
    active_ = p != optim::pass::inference;
  }

  void forward(const matrix<T>& in, matrix<T>& out) override;

  /// Applies the mask of the last forward pass.
  void backward(const matrix<T>& in, const matrix<T>& out,
                const matrix<T>& dout, matrix<T>* din) override;

private:
  double p_;
  rng gen_{0};
  bool active_ = false;
  matrix<T> mask_; ///< 0 or 1 / (1 - p) per value of the last forward
};

} // namespace troupe::optim
