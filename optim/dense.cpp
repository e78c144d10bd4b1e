#include "optim/dense.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace troupe::optim {

template <class T>
dense<T>::dense(int out_features) : out_(out_features) {
  if (out_features <= 0)
    throw std::invalid_argument("dense: out_features must be positive, got "
                                + std::to_string(out_features));
}

template <class T>
shape dense<T>::setup(const shape& in) {
  const std::size_t n = in.size();
  if (n == 0 || n > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw std::invalid_argument("unusable input size " + std::to_string(n));
  in_ = static_cast<int>(n);
  this->set_fans(in_, out_);
  return shape{out_, 1, 1};
}

template <class T>
void dense<T>::forward(const matrix<T>& in, matrix<T>& out) {
  const_matrix_map<T> w{this->w_, out_, in_};
  const_vector_map<T> b{this->w_ + static_cast<std::size_t>(out_) * in_, out_};
  // Start from the bias: saves the zero pass of a plain product assignment.
  out.resize(out_, in.cols());
  out.colwise() = b;
  out.noalias() += w * in;
}

template <class T>
void dense<T>::backward(const matrix<T>& in, const matrix<T>& out,
                        const matrix<T>& dout, matrix<T>* din) {
  matrix_map<T> dw{this->dw_, out_, in_};
  vector_map<T> db{this->dw_ + static_cast<std::size_t>(out_) * in_, out_};
  dw.noalias() = dout * in.transpose();
  db.noalias() = dout.rowwise().sum();
  if (din != nullptr) {
    const_matrix_map<T> w{this->w_, out_, in_};
    din->noalias() = w.transpose() * dout;
  }
}

template class dense<float>;
template class dense<double>;

} // namespace troupe::optim
