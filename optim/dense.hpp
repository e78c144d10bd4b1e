#pragma once

#include <string>

#include "optim/affine_layer.hpp"

namespace troupe::optim {

/// Fully connected layer: `out = W * in + b` with the weight stored as an
/// `out x in` column-major matrix ("<prefix>.weight") followed by the bias
/// ("<prefix>.bias", `out` scalars). Reads per-sample columns; any input shape
/// is treated as its flat size.
template <class T>
class dense : public affine_layer<T> {
public:
  /// A layer with `out_features` outputs; throws std::invalid_argument unless
  /// `out_features > 0`.
  explicit dense(int out_features);

  std::string kind() const override {
    return "dense";
  }

  optim::layout input_layout() const noexcept override {
    return optim::layout::columns;
  }

  optim::layout output_layout() const noexcept override {
    return optim::layout::columns;
  }

  shape setup(const shape& in) override;

  void forward(const matrix<T>& in, matrix<T>& out) override;

  void backward(const matrix<T>& in, const matrix<T>& out,
                const matrix<T>& dout, matrix<T>* din) override;

  /// Number of inputs (valid after setup).
  int in_features() const noexcept {
    return in_;
  }

  /// Number of outputs.
  int out_features() const noexcept {
    return out_;
  }

private:
  int in_ = 0;
  int out_;
};

} // namespace troupe::optim
