#pragma once

#include <string>

#include "optim/layer.hpp"

namespace troupe::optim {

/// Rectified linear unit, `out = max(in, 0)` elementwise. Works in either
/// layout and keeps the shape. The gradient at exactly 0 is taken as 0.
template <class T>
class relu : public layer<T> {
public:
  std::string kind() const override {
    return "relu";
  }

  shape setup(const shape& in) override;

  void forward(const matrix<T>& in, matrix<T>& out) override;

  /// Uses `out > 0` as the mask, so `in` is not read.
  void backward(const matrix<T>& in, const matrix<T>& out,
                const matrix<T>& dout, matrix<T>* din) override;
};

} // namespace troupe::optim
