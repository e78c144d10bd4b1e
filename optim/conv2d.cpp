#include "optim/conv2d.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "optim/detail/skinny_gemm.hpp"

namespace troupe::optim {

namespace {

std::string describe(const shape& s) {
  return "{" + std::to_string(s.c) + ", " + std::to_string(s.h) + ", "
         + std::to_string(s.w) + "}";
}

} // namespace

template <class T>
conv2d<T>::conv2d(const conv2d_options& opts) : opts_(opts) {
  if (opts.out_channels <= 0)
    throw std::invalid_argument("conv2d: out_channels must be positive, got "
                                + std::to_string(opts.out_channels));
  if (opts.kernel <= 0)
    throw std::invalid_argument("conv2d: kernel must be positive, got "
                                + std::to_string(opts.kernel));
  if (opts.stride < 1)
    throw std::invalid_argument("conv2d: stride must be at least 1, got "
                                + std::to_string(opts.stride));
  if (opts.padding < 0)
    throw std::invalid_argument("conv2d: padding must not be negative, got "
                                + std::to_string(opts.padding));
}

template <class T>
shape conv2d<T>::setup(const shape& in) {
  const int k = opts_.kernel;
  const int p = opts_.padding;
  if (in.c <= 0 || in.h + 2 * p < k || in.w + 2 * p < k)
    throw std::invalid_argument("input " + describe(in)
                                + " is smaller than the " + std::to_string(k)
                                + "x" + std::to_string(k)
                                + " kernel with padding " + std::to_string(p));
  in_ = in;
  out_ = shape{opts_.out_channels, (in.h + 2 * p - k) / opts_.stride + 1,
               (in.w + 2 * p - k) / opts_.stride + 1};
  taps_ = in.c * k * k;
  this->set_fans(taps_, opts_.out_channels);
  return out_;
}

template <class T>
detail::conv_geometry conv2d<T>::geometry(int batch) const noexcept {
  detail::conv_geometry g;
  g.channels = in_.c;
  g.batch = batch;
  g.h = in_.h;
  g.w = in_.w;
  g.kernel = opts_.kernel;
  g.stride = opts_.stride;
  g.padding = opts_.padding;
  return g;
}

template <class T>
void conv2d<T>::forward(const matrix<T>& in, matrix<T>& out) {
  const int batch = static_cast<int>(in.cols());
  const auto g = geometry(batch);
  const Eigen::Index n = static_cast<Eigen::Index>(batch) * out_.h * out_.w;
  const int cout = opts_.out_channels;
  const T* x = in.data();
  if (opts_.padding > 0) {
    if (padded_.size() != g.padded_size())
      padded_.assign(g.padded_size(), T{0}); // borders stay zero
    detail::pad_planes(g, x, padded_.data());
    x = padded_.data();
  }
  if (cols_.rows() != n || cols_.cols() != taps_)
    cols_.resize(n, taps_);
  detail::im2col(g, x, cols_.data());
  // (B * Hout * Wout) x Cout column-major is the (Cout, B, Hout, Wout) layout.
  out.resize(static_cast<Eigen::Index>(out_.size()), batch);
  matrix_map<T> y{out.data(), n, cout};
  const_matrix_map<T> wt{this->w_, taps_, cout};
  const T* bias = this->w_ + static_cast<std::size_t>(taps_) * cout;
  // Start from the bias: saves the zero pass of a plain assignment.
  for (int c = 0; c < cout; ++c)
    y.col(c).setConstant(bias[c]);
  if (cout <= detail::max_small_cols)
    detail::tall_times_small(cols_.data(), n, taps_, this->w_, cout,
                             out.data());
  else
    y.noalias() += cols_ * wt;
}

template <class T>
void conv2d<T>::backward(const matrix<T>& in, const matrix<T>& out,
                         const matrix<T>& dout, matrix<T>* din) {
  const int batch = static_cast<int>(dout.cols());
  const auto g = geometry(batch);
  const Eigen::Index n = static_cast<Eigen::Index>(batch) * out_.h * out_.w;
  const int cout = opts_.out_channels;
  const_matrix_map<T> dy{dout.data(), n, cout};
  matrix_map<T> dw{this->dw_, taps_, cout};
  vector_map<T> db{this->dw_ + static_cast<std::size_t>(taps_) * cout, cout};
  if (cout <= detail::max_tall_cols) {
    detail::tall_transpose_times_tall(cols_.data(), n, taps_, dout.data(), cout,
                                      this->dw_);
  } else {
    // dW^T = dy^T * cols packs better than cols^T * dy (measured).
    dwt_.noalias() = dy.transpose() * cols_;
    dw = dwt_.transpose();
  }
  db.noalias() = dy.colwise().sum().transpose();
  if (din == nullptr)
    return;
  if (dcols_.rows() != n || dcols_.cols() != taps_)
    dcols_.resize(n, taps_);
  if (cout <= detail::max_inner_cols) {
    detail::tall_times_transpose(dout.data(), n, cout, this->w_, taps_,
                                 dcols_.data());
  } else {
    const_matrix_map<T> wt{this->w_, taps_, cout};
    dcols_.noalias() = dy * wt.transpose();
  }
  din->resize(static_cast<Eigen::Index>(in_.size()), batch);
  if (opts_.padding > 0) {
    if (dpadded_.size() != g.padded_size())
      dpadded_.resize(g.padded_size());
    std::fill(dpadded_.begin(), dpadded_.end(), T{0});
    detail::col2im(g, dcols_.data(), dpadded_.data());
    detail::crop_planes(g, dpadded_.data(), din->data());
  } else {
    din->setZero();
    detail::col2im(g, dcols_.data(), din->data());
  }
}

template class conv2d<float>;
template class conv2d<double>;

} // namespace troupe::optim
