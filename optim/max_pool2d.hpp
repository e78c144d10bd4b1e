#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "optim/pool2d.hpp"

namespace troupe::optim {

/// Max pooling over non-overlapping k x k windows (pool2d), as PyTorch's
/// MaxPool2d(k). Ties go to the first maximum in row-major window order.
///
/// `forward` remembers the arg-max of every window and `backward` routes the
/// gradient through them, so backward must follow the forward pass of the
/// same input (as the model does).
template <class T>
class max_pool2d : public pool2d<T> {
public:
  /// Throws std::invalid_argument unless `k >= 1`.
  explicit max_pool2d(int k);

  std::string kind() const override {
    return "pool";
  }

  /// Throws std::length_error if the input has 2^31 scalars or more (the
  /// arg-max indices are 32-bit).
  void forward(const matrix<T>& in, matrix<T>& out) override;

  void backward(const matrix<T>& in, const matrix<T>& out,
                const matrix<T>& dout, matrix<T>* din) override;

private:
  /// Pools one output row of `wo` windows whose top-left input is `top`;
  /// `K` is the window size if known at compile time, else 0.
  template <int K>
  void pool_row(const T* x, T* y, std::int32_t* idx, std::int32_t top, int w,
                int wo) const noexcept;

  using pool2d<T>::k_;
  using pool2d<T>::in_;
  using pool2d<T>::out_;
  std::vector<std::int32_t> argmax_; // index into the input, per output
};

} // namespace troupe::optim
