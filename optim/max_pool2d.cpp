#include "optim/max_pool2d.hpp"

#include <limits>
#include <stdexcept>

namespace troupe::optim {

template <class T>
template <int K>
void max_pool2d<T>::pool_row(const T* x, T* y, std::int32_t* idx,
                             std::int32_t top, int w, int wo) const noexcept {
  // Branch-free selects (random data defeats branch prediction); with K
  // known the window loops unroll.
  const int k = K > 0 ? K : k_;
  for (int ow = 0; ow < wo; ++ow) {
    const std::int32_t first = top + ow * k;
    T best = x[first];
    std::int32_t where = first;
    for (int di = 0; di < k; ++di) {
      for (int dj = 0; dj < k; ++dj) {
        const std::int32_t i = first + di * w + dj;
        // A mask instead of a conditional keeps the compiler from branching.
        const std::int32_t larger = -static_cast<std::int32_t>(x[i] > best);
        where = (where & ~larger) | (i & larger);
        best = x[i] > best ? x[i] : best;
      }
    }
    y[ow] = best;
    idx[ow] = where;
  }
}

template <class T>
max_pool2d<T>::max_pool2d(int k) : pool2d<T>(k, "max_pool2d") {}

template <class T>
void max_pool2d<T>::forward(const matrix<T>& in, matrix<T>& out) {
  if (in.size() > std::numeric_limits<std::int32_t>::max())
    throw std::length_error("max_pool2d: input too large for 32-bit indices");
  const int batch = static_cast<int>(in.cols());
  const int planes = in_.c * batch;
  out.resize(static_cast<Eigen::Index>(out_.size()), batch);
  argmax_.resize(static_cast<std::size_t>(out.size()));
  const T* x = in.data();
  T* y = out.data();
  std::int32_t* idx = argmax_.data();
  const int wo = out_.w;
  for (int pl = 0; pl < planes; ++pl) {
    for (int oh = 0; oh < out_.h; ++oh, y += wo, idx += wo) {
      const std::int32_t top = (pl * in_.h + oh * k_) * in_.w;
      if (k_ == 2)
        pool_row<2>(x, y, idx, top, in_.w, wo);
      else
        pool_row<0>(x, y, idx, top, in_.w, wo);
    }
  }
}

template <class T>
void max_pool2d<T>::backward(const matrix<T>& in, const matrix<T>& out,
                             const matrix<T>& dout, matrix<T>* din) {
  if (din == nullptr)
    return;
  din->resize(static_cast<Eigen::Index>(in_.size()), dout.cols());
  din->setZero();
  T* dx = din->data();
  const T* dy = dout.data();
  const std::int32_t* idx = argmax_.data();
  const Eigen::Index n = dout.size();
  // Windows do not overlap, so every input receives at most one gradient.
  for (Eigen::Index i = 0; i < n; ++i)
    dx[idx[i]] = dy[i];
}

template class max_pool2d<float>;
template class max_pool2d<double>;

} // namespace troupe::optim
