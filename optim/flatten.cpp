#include "optim/flatten.hpp"

#include <algorithm>
#include <stdexcept>

namespace troupe::optim {

template <class T>
shape flatten<T>::setup(const shape& in) {
  if (in.size() == 0)
    throw std::invalid_argument("empty input shape");
  in_ = in;
  return shape{static_cast<int>(in.size()), 1, 1};
}

template <class T>
void flatten<T>::forward(const matrix<T>& in, matrix<T>& out) {
  const Eigen::Index batch = in.cols();
  const Eigen::Index hw = static_cast<Eigen::Index>(in_.h) * in_.w;
  const Eigen::Index chw = in_.c * hw;
  out.resize(chw, batch);
  const T* x = in.data();
  T* y = out.data();
  for (Eigen::Index c = 0; c < in_.c; ++c)
    for (Eigen::Index b = 0; b < batch; ++b) {
      const T* src = x + (c * batch + b) * hw;
      std::copy(src, src + hw, y + b * chw + c * hw);
    }
}

template <class T>
void flatten<T>::backward(const matrix<T>& in, const matrix<T>& out,
                          const matrix<T>& dout, matrix<T>* din) {
  if (din == nullptr)
    return;
  const Eigen::Index batch = dout.cols();
  const Eigen::Index hw = static_cast<Eigen::Index>(in_.h) * in_.w;
  const Eigen::Index chw = in_.c * hw;
  din->resize(chw, batch);
  const T* dy = dout.data();
  T* dx = din->data();
  for (Eigen::Index c = 0; c < in_.c; ++c)
    for (Eigen::Index b = 0; b < batch; ++b) {
      const T* src = dy + b * chw + c * hw;
      std::copy(src, src + hw, dx + (c * batch + b) * hw);
    }
}

template class flatten<float>;
template class flatten<double>;

} // namespace troupe::optim
