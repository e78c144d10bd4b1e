#pragma once

#include <string>

#include "optim/layer.hpp"

namespace troupe::optim {

/// The elementwise activations besides relu.
enum class activation_kind {
  tanh,    ///< tanh(x)
  sigmoid, ///< 1 / (1 + exp(-x))
  gelu,    ///< x * Phi(x), Phi the standard normal CDF (PyTorch's exact form)
};

/// "tanh", "sigmoid", "gelu".
const char* to_string(activation_kind k) noexcept;

/// An elementwise activation layer: works in either layout, keeps the shape,
/// has no parameters. kind() is the function's name.
template <class T>
class activation : public layer<T> {
public:
  explicit activation(activation_kind k) noexcept : kind_(k) {}

  std::string kind() const override {
    return to_string(kind_);
  }

  activation_kind function() const noexcept {
    return kind_;
  }

  shape setup(const shape& in) override;

  void forward(const matrix<T>& in, matrix<T>& out) override;

  /// tanh and sigmoid read only `out`; gelu reads `in`.
  void backward(const matrix<T>& in, const matrix<T>& out,
                const matrix<T>& dout, matrix<T>* din) override;

private:
  activation_kind kind_;
};

} // namespace troupe::optim
