#include "optim/embedding.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace troupe::optim {

template <class T>
embedding<T>::embedding(int vocabulary, int dim)
    : vocabulary_(vocabulary), dim_(dim) {
  if (vocabulary <= 0 || dim <= 0)
    throw std::invalid_argument("embedding: vocabulary and dim must be "
                                "positive");
}

template <class T>
shape embedding<T>::setup(const shape& in) {
  if (in.size() == 0)
    throw std::invalid_argument("empty input shape");
  fields_ = static_cast<int>(in.size());
  const auto out = static_cast<std::size_t>(fields_) * dim_;
  if (out > (std::size_t{1} << 30))
    throw std::invalid_argument("gives " + std::to_string(out)
                                + " values per sample");
  return shape{static_cast<int>(out), 1, 1};
}

template <class T>
void embedding<T>::declare(range_table& table, const std::string& prefix) {
  table.add(prefix + ".weight", static_cast<std::size_t>(vocabulary_) * dim_,
            range_kind::weight);
}

template <class T>
void embedding<T>::init(rng& gen) {
  const auto n = static_cast<std::size_t>(vocabulary_) * dim_;
  for (std::size_t i = 0; i < n; ++i)
    w_[i] = static_cast<T>(gen.normal());
}

template <class T>
Eigen::Index embedding<T>::id(const matrix<T>& in, Eigen::Index f,
                              Eigen::Index b) const {
  const T v = in(f, b);
  if (!(v >= T{0} && v < static_cast<T>(vocabulary_)) || std::floor(v) != v)
    throw std::invalid_argument(
        "embedding: input " + std::to_string(f) + " of sample "
        + std::to_string(b) + " is " + std::to_string(static_cast<double>(v))
        + ", not an id in [0, " + std::to_string(vocabulary_) + ")");
  return static_cast<Eigen::Index>(v);
}

template <class T>
void embedding<T>::forward(const matrix<T>& in, matrix<T>& out) {
  out.resize(static_cast<Eigen::Index>(fields_) * dim_, in.cols());
  for (Eigen::Index b = 0; b < in.cols(); ++b)
    for (Eigen::Index f = 0; f < fields_; ++f) {
      const T* row = w_ + id(in, f, b) * dim_;
      std::copy(row, row + dim_, out.col(b).data() + f * dim_);
    }
}

template <class T>
void embedding<T>::backward(const matrix<T>& in, const matrix<T>& out,
                            const matrix<T>& dout, matrix<T>* din) {
  std::fill(dw_, dw_ + static_cast<std::size_t>(vocabulary_) * dim_, T{0});
  for (Eigen::Index b = 0; b < in.cols(); ++b)
    for (Eigen::Index f = 0; f < fields_; ++f) {
      T* row = dw_ + id(in, f, b) * dim_;
      const T* d = dout.col(b).data() + f * dim_;
      for (int k = 0; k < dim_; ++k)
        row[k] += d[k];
    }
  if (din != nullptr)
    din->setZero(in.rows(), in.cols());
}

template class embedding<float>;
template class embedding<double>;

} // namespace troupe::optim
