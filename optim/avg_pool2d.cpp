#include "optim/avg_pool2d.hpp"

#include <stdexcept>

namespace troupe::optim {

template <class T>
avg_pool2d<T>::avg_pool2d(int k) : pool2d<T>(k, "avg_pool2d") {}

template <class T>
void avg_pool2d<T>::forward(const matrix<T>& in, matrix<T>& out) {
  const Eigen::Index batch = in.cols();
  const Eigen::Index planes = in_.c * batch;
  out.resize(static_cast<Eigen::Index>(out_.size()), batch);
  const T scale = T{1} / static_cast<T>(k_ * k_);
  const T* x = in.data();
  T* y = out.data();
  for (Eigen::Index pl = 0; pl < planes; ++pl)
    for (int oh = 0; oh < out_.h; ++oh)
      for (int ow = 0; ow < out_.w; ++ow) {
        const T* top = x + (pl * in_.h + oh * k_) * in_.w + ow * k_;
        T sum{0};
        for (int di = 0; di < k_; ++di)
          for (int dj = 0; dj < k_; ++dj)
            sum += top[di * in_.w + dj];
        y[(pl * out_.h + oh) * out_.w + ow] = sum * scale;
      }
}

template <class T>
void avg_pool2d<T>::backward(const matrix<T>&, const matrix<T>&,
                             const matrix<T>& dout, matrix<T>* din) {
  if (din == nullptr)
    return;
  const Eigen::Index batch = dout.cols();
  const Eigen::Index planes = in_.c * batch;
  din->resize(static_cast<Eigen::Index>(in_.size()), batch);
  din->setZero(); // the rows and columns no window covers
  const T scale = T{1} / static_cast<T>(k_ * k_);
  const T* dy = dout.data();
  T* dx = din->data();
  for (Eigen::Index pl = 0; pl < planes; ++pl)
    for (int oh = 0; oh < out_.h; ++oh)
      for (int ow = 0; ow < out_.w; ++ow) {
        const T g = dy[(pl * out_.h + oh) * out_.w + ow] * scale;
        T* top = dx + (pl * in_.h + oh * k_) * in_.w + ow * k_;
        for (int di = 0; di < k_; ++di)
          for (int dj = 0; dj < k_; ++dj)
            top[di * in_.w + dj] = g;
      }
}

template class avg_pool2d<float>;
template class avg_pool2d<double>;

} // namespace troupe::optim
