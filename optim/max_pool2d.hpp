#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "optim/layer.hpp"

namespace troupe::optim {

/// Max pooling over non-overlapping k x k windows (kernel = stride = k) on
/// the planes layout (C, B, H, W). Output size per axis is `in / k` (rows and
/// columns that do not fill a window are dropped, as in PyTorch). Ties go to
/// the first maximum in row-major window order.
///
/// `forward` remembers the arg-max of every window and `backward` routes the
/// gradient through them, so backward must follow the forward pass of the
/// same input (as the model does).
template <class T>
class max_pool2d : public layer<T> {
public:
  /// Throws std::invalid_argument unless `k >= 1`.
  explicit max_pool2d(int k);

  std::string kind() const override {
    return "pool";
  }

  optim::layout input_layout() const noexcept override {
    return optim::layout::planes;
  }

  optim::layout output_layout() const noexcept override {
    return optim::layout::planes;
  }

  shape setup(const shape& in) override;

  /// Throws std::length_error if the input has 2^31 scalars or more (the
  /// arg-max indices are 32-bit).
  void forward(const matrix<T>& in, matrix<T>& out) override;

  void backward(const matrix<T>& in, const matrix<T>& out,
                const matrix<T>& dout, matrix<T>* din) override;

  /// Window size and stride.
  int kernel() const noexcept {
    return k_;
  }

private:
  /// Pools one output row of `wo` windows whose top-left input is `top`;
  /// `K` is the window size if known at compile time, else 0.
  template <int K>
  void pool_row(const T* x, T* y, std::int32_t* idx, std::int32_t top, int w,
                int wo) const noexcept;

  int k_;
  shape in_;
  shape out_;
  std::vector<std::int32_t> argmax_; // index into the input, per output
};

} // namespace troupe::optim
