#include "optim/dropout.hpp"

#include <stdexcept>

namespace troupe::optim {

template <class T>
dropout<T>::dropout(double p) : p_(p) {
  if (!(p >= 0 && p < 1))
    throw std::invalid_argument("dropout: p must be in [0, 1), not "
                                + std::to_string(p));
}

template <class T>
shape dropout<T>::setup(const shape& in) {
  if (in.size() == 0)
    throw std::invalid_argument("empty input shape");
  return in;
}

template <class T>
void dropout<T>::forward(const matrix<T>& in, matrix<T>& out) {
  out.resize(in.rows(), in.cols());
  if (!active_ || p_ == 0) {
    out = in;
    return;
  }
  mask_.resize(in.rows(), in.cols());
  const T keep = static_cast<T>(1 / (1 - p_));
  const T* x = in.data();
  T* y = out.data();
  T* m = mask_.data();
  for (Eigen::Index i = 0; i < in.size(); ++i) {
    m[i] = gen_.uniform() < p_ ? T{0} : keep;
    y[i] = x[i] * m[i];
  }
}

template <class T>
void dropout<T>::backward(const matrix<T>& in, const matrix<T>& out,
                          const matrix<T>& dout, matrix<T>* din) {
  if (din == nullptr)
    return;
  if (!active_ || p_ == 0) {
    *din = dout;
    return;
  }
  din->resize(dout.rows(), dout.cols());
  din->array() = dout.array() * mask_.array();
}

template class dropout<float>;
template class dropout<double>;

} // namespace troupe::optim
