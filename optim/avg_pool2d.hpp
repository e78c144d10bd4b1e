#pragma once

#include <string>

#include "optim/pool2d.hpp"

namespace troupe::optim {

/// Average pooling over non-overlapping k x k windows (pool2d), as
/// PyTorch's AvgPool2d(k): each output is its window's mean and each input
/// of a window gets 1/k^2 of the window's gradient.
template <class T>
class avg_pool2d : public pool2d<T> {
public:
  /// Throws std::invalid_argument unless `k >= 1`.
  explicit avg_pool2d(int k);

  std::string kind() const override {
    return "avgpool";
  }

  void forward(const matrix<T>& in, matrix<T>& out) override;

  void backward(const matrix<T>& in, const matrix<T>& out,
                const matrix<T>& dout, matrix<T>* din) override;

private:
  using pool2d<T>::k_;
  using pool2d<T>::in_;
  using pool2d<T>::out_;
};

} // namespace troupe::optim
