#include "optim/residual.hpp"

#include <map>
#include <stdexcept>

namespace troupe::optim {

template <class T>
residual<T>::residual(std::vector<std::unique_ptr<layer<T>>> inner)
    : inner_(std::move(inner)) {
  if (inner_.empty())
    throw std::invalid_argument("residual: no inner layers");
  for (const auto& ptr : inner_)
    if (ptr == nullptr)
      throw std::invalid_argument("residual: a null inner layer");
  std::map<std::string, int> counts;
  for (const auto& ptr : inner_)
    names_.push_back(ptr->kind() + std::to_string(++counts[ptr->kind()]));
}

template <class T>
shape residual<T>::setup(const shape& in) {
  shape cur = in;
  need_ = layout::same;
  layout lay = layout::same; // as the block's input
  for (std::size_t i = 0; i < inner_.size(); ++i) {
    const shape before = cur;
    try {
      cur = inner_[i]->setup(cur);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(names_[i] + ": " + e.what());
    }
    const layout need = inner_[i]->input_layout();
    if (need != layout::same && before.c > 1) {
      if (lay == layout::same && need_ == layout::same)
        need_ = need; // the block's input must come in this layout
      else if (need != (lay == layout::same ? need_ : lay))
        throw std::invalid_argument(names_[i]
                                    + ": needs another layout than the "
                                      "layer before it inside the block");
    }
    if (inner_[i]->output_layout() != layout::same)
      lay = inner_[i]->output_layout();
  }
  if (!(cur == in))
    throw std::invalid_argument(
        "the block gives " + to_string(cur) + " per sample, not its input's "
        + to_string(in) + " (in + f(in) needs both " + "alike)");
  if (lay != layout::same && lay != need_ && in.c > 1)
    throw std::invalid_argument("the block's output is in another layout "
                                "than its input");
  acts_.resize(inner_.size());
  deltas_.resize(inner_.size());
  return in;
}

template <class T>
void residual<T>::declare(range_table& table, const std::string& prefix) {
  const auto start = table.total();
  offsets_.clear();
  for (std::size_t i = 0; i < inner_.size(); ++i) {
    offsets_.push_back(table.total() - start);
    inner_[i]->declare(table, prefix + "." + names_[i]);
  }
}

template <class T>
void residual<T>::bind(T* params, T* grads) {
  for (std::size_t i = 0; i < inner_.size(); ++i)
    inner_[i]->bind(params + offsets_[i], grads + offsets_[i]);
}

template <class T>
void residual<T>::init(rng& gen) {
  for (auto& ptr : inner_)
    ptr->init(gen);
}

template <class T>
void residual<T>::declare_buffers(range_table& table,
                                  const std::string& prefix) {
  const auto start = table.total();
  buffer_offsets_.clear();
  for (std::size_t i = 0; i < inner_.size(); ++i) {
    buffer_offsets_.push_back(table.total() - start);
    inner_[i]->declare_buffers(table, prefix + "." + names_[i]);
  }
}

template <class T>
void residual<T>::bind_buffers(T* buffers) {
  for (std::size_t i = 0; i < inner_.size(); ++i)
    inner_[i]->bind_buffers(buffers + buffer_offsets_[i]);
}

template <class T>
void residual<T>::reset_buffers() {
  for (auto& ptr : inner_)
    ptr->reset_buffers();
}

template <class T>
void residual<T>::seed_noise(std::uint64_t seed) {
  rng gen{seed};
  for (auto& ptr : inner_)
    ptr->seed_noise(gen.next());
}

template <class T>
void residual<T>::set_pass(optim::pass p) {
  for (auto& ptr : inner_)
    ptr->set_pass(p);
}

template <class T>
void residual<T>::forward(const matrix<T>& in, matrix<T>& out) {
  inner_[0]->forward(in, acts_[0]);
  for (std::size_t i = 1; i < inner_.size(); ++i)
    inner_[i]->forward(acts_[i - 1], acts_[i]);
  out.resize(in.rows(), in.cols());
  out = in + acts_.back();
}

template <class T>
void residual<T>::backward(const matrix<T>& in, const matrix<T>& out,
                           const matrix<T>& dout, matrix<T>* din) {
  const matrix<T>* d = &dout;
  for (std::size_t i = inner_.size(); i-- > 0;) {
    const matrix<T>& x = i == 0 ? in : acts_[i - 1];
    matrix<T>* dx = i == 0 && din == nullptr ? nullptr : &deltas_[i];
    inner_[i]->backward(x, acts_[i], *d, dx);
    d = dx;
  }
  if (din != nullptr) {
    din->resize(dout.rows(), dout.cols());
    *din = dout + deltas_[0];
  }
}

template class residual<float>;
template class residual<double>;

} // namespace troupe::optim
