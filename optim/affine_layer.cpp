#include "optim/affine_layer.hpp"

#include <cmath>

namespace troupe::optim {

template <class T>
void affine_layer<T>::declare(range_table& table, const std::string& prefix) {
  table.add(prefix + ".weight", static_cast<std::size_t>(fan_in_) * fan_out_,
            range_kind::weight);
  table.add(prefix + ".bias", static_cast<std::size_t>(fan_out_),
            range_kind::bias);
}

template <class T>
void affine_layer<T>::bind(T* params, T* grads) {
  w_ = params;
  dw_ = grads;
}

template <class T>
void affine_layer<T>::init(rng& gen) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in_));
  const std::size_t n = static_cast<std::size_t>(fan_in_ + 1) * fan_out_;
  for (std::size_t i = 0; i < n; ++i)
    w_[i] = static_cast<T>(gen.uniform(-bound, bound));
}

template class affine_layer<float>;
template class affine_layer<double>;

} // namespace troupe::optim
