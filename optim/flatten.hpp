#pragma once

#include <string>

#include "optim/layer.hpp"

namespace troupe::optim {

/// Converts the planes layout (C, B, H, W) into per-sample columns holding
/// (C, H, W) in that order, i.e. PyTorch's `x.flatten(1)`; `backward` does
/// the inverse. The output shape is `{C * H * W, 1, 1}`.
template <class T>
class flatten : public layer<T> {
public:
  std::string kind() const override {
    return "flatten";
  }

  optim::layout input_layout() const noexcept override {
    return optim::layout::planes;
  }

  optim::layout output_layout() const noexcept override {
    return optim::layout::columns;
  }

  shape setup(const shape& in) override;

  void forward(const matrix<T>& in, matrix<T>& out) override;

  void backward(const matrix<T>& in, const matrix<T>& out,
                const matrix<T>& dout, matrix<T>* din) override;

private:
  shape in_;
};

} // namespace troupe::optim
