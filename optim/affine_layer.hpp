#pragma once

#include <string>

#include "optim/layer.hpp"

namespace troupe::optim {

/// Base of the layers with a weight and a bias (dense, conv2d): a weight of
/// `fan_in x fan_out` scalars ("<prefix>.weight", the layer decides its
/// layout) followed by `fan_out` biases ("<prefix>.bias"), initialized as in
/// PyTorch, uniform in +-1/sqrt(fan_in), weight in storage order then bias.
/// The derived layer calls `set_fans` from its `setup`.
template <class T>
class affine_layer : public layer<T> {
public:
  void declare(range_table& table, const std::string& prefix) override;

  void bind(T* params, T* grads) override;

  void init(rng& gen) override;

protected:
  /// Fixes the parameter block's dimensions; call from setup().
  void set_fans(int fan_in, int fan_out) noexcept {
    fan_in_ = fan_in;
    fan_out_ = fan_out;
  }

  /// The weight, then the bias, in the parameter buffer.
  T* w_ = nullptr;
  /// The same block in the gradient buffer.
  T* dw_ = nullptr;

private:
  int fan_in_ = 0;
  int fan_out_ = 0;
};

} // namespace troupe::optim
