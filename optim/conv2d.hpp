#pragma once

#include <string>

#include "optim/affine_layer.hpp"
#include "optim/detail/im2col.hpp"

namespace troupe::optim {

/// Named settings of a 2-D convolution.
struct conv2d_options {
  int out_channels = 0; ///< number of filters, > 0
  int kernel = 0;       ///< square kernel size, > 0
  int stride = 1;       ///< step in both directions, >= 1
  int padding = 0;      ///< zeros added on every border, >= 0
};

/// 2-D convolution (cross-correlation, as in PyTorch) on the planes layout
/// (C, B, H, W), lowered to one GEMM for the whole batch: the im2col matrix
/// `cols` is `(B * Hout * Wout) x (Cin * k * k)` and `out = cols * Wt + b`,
/// which is exactly the (Cout, B, Hout, Wout) memory of the output. Backward
/// forms `dWt = cols^T * dout`, `db` as column sums of `dout` and
/// `dcols = dout * Wt^T`, then scatter-adds `dcols` back (col2im). With few
/// filters these products run on the register-blocked kernels of
/// detail/skinny_gemm.hpp (about twice Eigen's GEMM there), else on Eigen.
///
/// Parameters: "<prefix>.weight" is PyTorch's `[Cout][Cin][k][k]` row-major,
/// i.e. `Wt` as a `(Cin * k * k) x Cout` column-major matrix;
/// "<prefix>.bias" holds Cout scalars. Output size per axis is
/// `(in + 2 * padding - kernel) / stride + 1`.
///
/// `backward` reuses the im2col matrix of the latest `forward`, so it must
/// follow the forward pass of the same input (as the model does).
template <class T>
class conv2d : public affine_layer<T> {
public:
  /// Throws std::invalid_argument for a non-positive channel count or kernel
  /// size, a stride below 1 or a negative padding.
  explicit conv2d(const conv2d_options& opts);

  std::string kind() const override {
    return "conv";
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

  /// The settings it was made with.
  const conv2d_options& options() const noexcept {
    return opts_;
  }

private:
  /// The geometry of a batch of `batch` samples.
  detail::conv_geometry geometry(int batch) const noexcept;

  conv2d_options opts_;
  shape in_;
  shape out_;
  int taps_ = 0; // Cin * k * k
  // Work buffers, resized only when the batch size changes.
  flat_storage<T> padded_;  // zero-padded input planes (padding > 0)
  flat_storage<T> dpadded_; // their gradient
  matrix<T> cols_;          // im2col of the latest forward input
  matrix<T> dcols_;         // d(loss)/d(cols)
  matrix<T> dwt_;           // weight gradient as Cout x taps
};

} // namespace troupe::optim
