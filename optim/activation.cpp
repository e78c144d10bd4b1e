#include "optim/activation.hpp"

#include <cmath>
#include <stdexcept>

namespace troupe::optim {

const char* to_string(activation_kind k) noexcept {
  switch (k) {
  case activation_kind::tanh:
    return "tanh";
  case activation_kind::sigmoid:
    return "sigmoid";
  case activation_kind::gelu:
    return "gelu";
  }
  return "?";
}

template <class T>
shape activation<T>::setup(const shape& in) {
  if (in.size() == 0)
    throw std::invalid_argument("empty input shape");
  return in;
}

namespace {

constexpr double inv_sqrt2 = 0.70710678118654752440;
constexpr double inv_sqrt_2pi = 0.39894228040143267794;

template <class T>
T sigmoid_of(T x) {
  // Stable for large |x|: exp of a non-positive number only.
  if (x >= T{0})
    return T{1} / (T{1} + std::exp(-x));
  const T e = std::exp(x);
  return e / (T{1} + e);
}

} // namespace

template <class T>
void activation<T>::forward(const matrix<T>& in, matrix<T>& out) {
  out.resize(in.rows(), in.cols());
  const T* x = in.data();
  T* y = out.data();
  const Eigen::Index n = in.size();
  switch (kind_) {
  case activation_kind::tanh:
    for (Eigen::Index i = 0; i < n; ++i)
      y[i] = std::tanh(x[i]);
    break;
  case activation_kind::sigmoid:
    for (Eigen::Index i = 0; i < n; ++i)
      y[i] = sigmoid_of(x[i]);
    break;
  case activation_kind::gelu:
    for (Eigen::Index i = 0; i < n; ++i)
      y[i] = T{0.5} * x[i] * (T{1} + std::erf(x[i] * T(inv_sqrt2)));
    break;
  }
}

template <class T>
void activation<T>::backward(const matrix<T>& in, const matrix<T>& out,
                             const matrix<T>& dout, matrix<T>* din) {
  if (din == nullptr)
    return;
  din->resize(dout.rows(), dout.cols());
  const T* x = in.data();
  const T* y = out.data();
  const T* dy = dout.data();
  T* dx = din->data();
  const Eigen::Index n = dout.size();
  switch (kind_) {
  case activation_kind::tanh:
    for (Eigen::Index i = 0; i < n; ++i)
      dx[i] = dy[i] * (T{1} - y[i] * y[i]);
    break;
  case activation_kind::sigmoid:
    for (Eigen::Index i = 0; i < n; ++i)
      dx[i] = dy[i] * y[i] * (T{1} - y[i]);
    break;
  case activation_kind::gelu:
    // d/dx x Phi(x) = Phi(x) + x phi(x).
    for (Eigen::Index i = 0; i < n; ++i) {
      const T cdf = T{0.5} * (T{1} + std::erf(x[i] * T(inv_sqrt2)));
      const T pdf = T(inv_sqrt_2pi) * std::exp(T{-0.5} * x[i] * x[i]);
      dx[i] = dy[i] * (cdf + x[i] * pdf);
    }
    break;
  }
}

template class activation<float>;
template class activation<double>;

} // namespace troupe::optim
