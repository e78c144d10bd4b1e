#pragma once

#include <string>

#include "optim/detail/pool_window.hpp"
#include "optim/layer.hpp"

namespace troupe::optim {

/// What max_pool2d and avg_pool2d share: non-overlapping k x k windows
/// (kernel = stride = k) on the planes layout (C, B, H, W), the output size
/// per axis `in / k` (rows and columns that do not fill a window are
/// dropped, as in PyTorch). A pooling layer implements kind(), forward()
/// and backward().
template <class T>
class pool2d : public layer<T> {
public:
  optim::layout input_layout() const noexcept override {
    return optim::layout::planes;
  }

  optim::layout output_layout() const noexcept override {
    return optim::layout::planes;
  }

  /// Throws std::invalid_argument if `in` is smaller than one window.
  shape setup(const shape& in) override {
    out_ = detail::pool_output(in, k_);
    in_ = in;
    return out_;
  }

  /// Window size and stride.
  int kernel() const noexcept {
    return k_;
  }

protected:
  /// Throws std::invalid_argument naming `layer` unless `k >= 1`.
  pool2d(int k, const char* layer) : k_(detail::pool_kernel(k, layer)) {}

  int k_;
  shape in_;
  shape out_;
};

} // namespace troupe::optim
