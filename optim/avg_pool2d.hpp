#pragma once

#include <string>

#include "optim/layer.hpp"

namespace troupe::optim {

/// Average pooling over non-overlapping k x k windows (kernel = stride = k)
/// on the planes layout (C, B, H, W), as PyTorch's AvgPool2d(k): the output
/// size per axis is `in / k` (rows and columns that do not fill a window are
/// dropped); each output is its window's mean and each input of a window
/// gets 1/k^2 of the window's gradient.
template <class T>
class avg_pool2d : public layer<T> {
public:
  /// Throws std::invalid_argument unless `k >= 1`.
  explicit avg_pool2d(int k);

  std::string kind() const override {
    return "avgpool";
  }

  optim::layout input_layout() const noexcept override {
    return optim::layout::planes;
  }

  optim::layout output_layout() const noexcept override {
    return optim::layout::planes;
  }

  shape setup(const shape& in) override;

  void forward(const matrix<T>& in, matrix<T>& out) override;

  void backward(const matrix<T>& in, const matrix<T>& out,
                const matrix<T>& dout, matrix<T>* din) override;

  /// Window size and stride.
  int kernel() const noexcept {
    return k_;
  }

private:
  int k_;
  shape in_;
  shape out_;
};

} // namespace troupe::optim
