#include "optim/relu.hpp"

#include <stdexcept>

namespace troupe::optim {

template <class T>
shape relu<T>::setup(const shape& in) {
  if (in.size() == 0)
    throw std::invalid_argument("empty input shape");
  return in;
}

template <class T>
void relu<T>::forward(const matrix<T>& in, matrix<T>& out) {
  out.resize(in.rows(), in.cols());
  const T* x = in.data();
  T* y = out.data();
  const Eigen::Index n = in.size();
  for (Eigen::Index i = 0; i < n; ++i)
    y[i] = x[i] > T{0} ? x[i] : T{0};
}

template <class T>
void relu<T>::backward(const matrix<T>& in, const matrix<T>& out,
                       const matrix<T>& dout, matrix<T>* din) {
  if (din == nullptr)
    return;
  din->resize(dout.rows(), dout.cols());
  const T* y = out.data();
  const T* dy = dout.data();
  T* dx = din->data();
  const Eigen::Index n = dout.size();
  for (Eigen::Index i = 0; i < n; ++i)
    dx[i] = y[i] > T{0} ? dy[i] : T{0};
}

template class relu<float>;
template class relu<double>;

} // namespace troupe::optim
