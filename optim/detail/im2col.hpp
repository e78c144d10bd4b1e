#pragma once

#include <cstddef>

namespace troupe::optim::detail {

/// Geometry of a 2-D convolution over `channels * batch` planes stored in
/// the planes layout (C, B, H, W).
struct conv_geometry {
  int channels = 1; ///< input channels
  int batch = 1;    ///< samples
  int h = 1;        ///< input height
  int w = 1;        ///< input width
  int kernel = 1;   ///< square kernel size
  int stride = 1;   ///< step in both directions
  int padding = 0;  ///< zeros on every border

  /// Height and width of a zero-padded input plane.
  int padded_h() const noexcept {
    return h + 2 * padding;
  }
  int padded_w() const noexcept {
    return w + 2 * padding;
  }

  /// Height and width of an output plane.
  int out_h() const noexcept {
    return (padded_h() - kernel) / stride + 1;
  }
  int out_w() const noexcept {
    return (padded_w() - kernel) / stride + 1;
  }

  /// Scalars in all padded input planes.
  std::size_t padded_size() const noexcept {
    return static_cast<std::size_t>(channels) * batch * padded_h() * padded_w();
  }
};

/// Copies the planes `x` into the interiors of the padded planes `padded`;
/// the borders of `padded` must already be zero and are left alone.
template <class T>
void pad_planes(const conv_geometry& g, const T* x, T* padded);

/// Copies the interiors of the padded planes `padded` into the planes `x`.
template <class T>
void crop_planes(const conv_geometry& g, const T* padded, T* x);

/// Fills the im2col matrix `cols`, column-major with
/// `batch * out_h * out_w` rows and one column per tap (ci, ki, kj), from the
/// padded input planes (the input itself when padding is 0).
template <class T>
void im2col(const conv_geometry& g, const T* padded, T* cols);

/// The adjoint of im2col: adds every entry of `dcols` into the padded planes
/// `dpadded` it was read from (the caller zeroes `dpadded` first).
template <class T>
void col2im(const conv_geometry& g, const T* dcols, T* dpadded);

} // namespace troupe::optim::detail
