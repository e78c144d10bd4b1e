#include "optim/torchscript_layer.hpp"

#include <ATen/Parallel.h>
#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "optim/detail/torchscript_module.hpp"

namespace troupe::optim {

using detail::first_line;
using detail::sizes_of;
using detail::sizes_text;

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size()
         && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

} // namespace

template <class T>
torchscript_layer<T>::torchscript_layer(const std::string& file,
                                        bool input_gradient)
    : impl_(std::make_unique<detail::torchscript_module<T>>(file,
                                                            input_gradient)) {}

template <class T>
torchscript_layer<T>::~torchscript_layer() = default;

template <class T>
const std::string& torchscript_layer<T>::file() const noexcept {
  return impl_->file;
}

template <class T>
void torchscript_layer<T>::set_input_gradient(bool on) noexcept {
  impl_->input_gradient = on;
}

template <class T>
const std::vector<torchscript_tensor>&
torchscript_layer<T>::parameters() const noexcept {
  return impl_->param_info;
}

template <class T>
const std::vector<torchscript_tensor>&
torchscript_layer<T>::buffers() const noexcept {
  return impl_->buffer_info;
}

template <class T>
shape torchscript_layer<T>::setup(const shape& in) {
  auto& s = *impl_;
  s.in = in;
  matrix<T> zero = matrix<T>::Zero(static_cast<Eigen::Index>(in.size()), 1);
  const auto x = s.wrap(zero);
  s.module.eval();
  torch::NoGradGuard no_grad;
  c10::IValue y;
  try {
    y = s.module.forward({x});
  } catch (const std::exception& e) {
    throw std::invalid_argument(s.file + ": forward on one sample of shape "
                                + sizes_text(sizes_of(x))
                                + " fails: " + first_line(e));
  }
  if (!y.isTensor())
    throw std::invalid_argument(s.file + ": forward must return one tensor, "
                                + "not " + y.tagKind());
  const auto t = y.toTensor();
  if (t.dim() < 1 || t.size(0) != 1 || t.numel() < 1)
    throw std::invalid_argument(s.file + ": forward on one sample of shape "
                                + sizes_text(sizes_of(x)) + " returns "
                                + sizes_text(sizes_of(t))
                                + ", not [1, ...] (the batch first)");
  if (t.scalar_type() != s.options.dtype().toScalarType())
    throw std::invalid_argument(
        s.file + ": forward returns " + c10::toString(t.scalar_type())
        + ", not " + c10::toString(s.options.dtype().toScalarType()));
  s.module.train(s.pass != optim::pass::inference);
  s.outputs = static_cast<std::size_t>(t.numel());
  if (s.outputs > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw std::invalid_argument(s.file + ": too many outputs per sample");
  return shape{static_cast<int>(s.outputs), 1, 1};
}

template <class T>
void torchscript_layer<T>::declare(range_table& table,
                                   const std::string& prefix) {
  auto& s = *impl_;
  s.param_offsets.clear();
  std::size_t offset = 0;
  for (std::size_t i = 0; i < s.params.size(); ++i) {
    const auto& name = s.param_info[i].name;
    const auto n = static_cast<std::size_t>(s.params[i].numel());
    table.add(prefix + "." + name, n,
              ends_with(name, "bias") ? range_kind::bias : range_kind::weight);
    s.param_offsets.push_back(offset);
    offset += n;
  }
  s.param_total = offset;
}

template <class T>
void torchscript_layer<T>::bind(T* params, T* grads) {
  auto& s = *impl_;
  s.param_base = params;
  s.grads = grads;
  s.copy_initial(s.initial_params, params, s.param_offsets);
  for (std::size_t i = 0; i < s.params.size(); ++i) {
    const auto& shape = s.param_info[i].shape;
    s.params[i].set_data(s.view(params, s.param_offsets[i], shape));
    s.params[i].mutable_grad() = s.view(grads, s.param_offsets[i], shape);
  }
}

template <class T>
void torchscript_layer<T>::init(rng& gen) {
  auto& s = *impl_;
  if (s.param_base != nullptr)
    s.copy_initial(s.initial_params, s.param_base, s.param_offsets);
  at::manual_seed(gen.next());
}

template <class T>
void torchscript_layer<T>::declare_buffers(range_table& table,
                                           const std::string& prefix) {
  auto& s = *impl_;
  s.buffer_offsets.clear();
  std::size_t offset = 0;
  for (std::size_t i = 0; i < s.buffers.size(); ++i) {
    const auto n = static_cast<std::size_t>(s.buffers[i].numel());
    table.add(prefix + "." + s.buffer_info[i].name, n, range_kind::buffer);
    s.buffer_offsets.push_back(offset);
    offset += n;
  }
}

template <class T>
void torchscript_layer<T>::bind_buffers(T* buffers) {
  auto& s = *impl_;
  s.buffer_base = buffers;
  s.copy_initial(s.initial_buffers, buffers, s.buffer_offsets);
  for (std::size_t i = 0; i < s.buffers.size(); ++i)
    s.buffers[i].set_data(
        s.view(buffers, s.buffer_offsets[i], s.buffer_info[i].shape));
}

template <class T>
void torchscript_layer<T>::reset_buffers() {
  auto& s = *impl_;
  if (s.buffer_base != nullptr)
    s.copy_initial(s.initial_buffers, s.buffer_base, s.buffer_offsets);
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < s.counters.size(); ++i)
    s.counters[i].copy_(s.initial_counters[i]);
  s.calibrated = 0;
}

template <class T>
void torchscript_layer<T>::seed_noise(std::uint64_t seed) {
  at::manual_seed(seed);
}

template <class T>
void torchscript_layer<T>::set_pass(optim::pass p) {
  impl_->pass = p;
  impl_->module.train(p != optim::pass::inference);
}

template <class T>
void torchscript_layer<T>::forward(const matrix<T>& in, matrix<T>& out) {
  at::internal::lazy_init_num_threads(); // one thread in this one too
  auto& s = *impl_;
  auto x = s.wrap(in);
  at::Tensor y;
  s.input.reset();
  s.output.reset();
  if (s.pass == optim::pass::training) {
    if (s.input_gradient)
      x.requires_grad_(true);
    y = s.run(x);
    s.input = x;
    s.output = y;
  } else {
    torch::NoGradGuard no_grad;
    y = s.pass == optim::pass::calibration && !s.norms.empty() ? s.calibrate(x)
                                                               : s.run(x);
  }
  const auto k = static_cast<Eigen::Index>(s.outputs);
  if (out.rows() != k || out.cols() != in.cols())
    out.resize(k, in.cols());
  std::memcpy(out.data(), y.template data_ptr<T>(),
              static_cast<std::size_t>(out.size()) * sizeof(T));
}

template <class T>
void torchscript_layer<T>::backward(const matrix<T>& in, const matrix<T>& out,
                                    const matrix<T>& dout, matrix<T>* din) {
  auto& s = *impl_;
  if (!s.output.defined())
    throw std::logic_error(s.file + ": backward without a training forward");
  if (din != nullptr && !s.input.requires_grad())
    throw std::logic_error(s.file
                           + ": backward asked for the input's gradient, "
                             "but the layer tracks none (input_gradient)");
  std::fill(s.grads, s.grads + s.param_total, T{0});
  if (din != nullptr) {
    if (din->rows() != in.rows() || din->cols() != in.cols())
      din->resize(in.rows(), in.cols());
    din->setZero();
    s.input.mutable_grad() = s.wrap(*din);
  }
  const auto g = torch::from_blob(const_cast<T*>(dout.data()), s.output.sizes(),
                                  s.options);
  if (s.output.requires_grad()) {
    try {
      s.output.backward(g);
    } catch (const std::exception& e) {
      throw std::runtime_error(s.file + ": backward: " + first_line(e));
    }
  }
  // Autograd accumulates into the views; should it have replaced one, the
  // values are copied back and the view restored.
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < s.params.size(); ++i) {
    T* where = s.grads + s.param_offsets[i];
    auto& grad = s.params[i].mutable_grad();
    if (grad.defined() && grad.data_ptr() == where)
      continue;
    auto v = s.view(s.grads, s.param_offsets[i], s.param_info[i].shape);
    if (grad.defined())
      v.copy_(grad);
    grad = v;
  }
  if (din != nullptr && s.input.grad().defined()
      && s.input.grad().data_ptr() != din->data())
    s.wrap(*din).copy_(s.input.grad());
  s.input.reset();
  s.output.reset();
}

template class torchscript_layer<float>;
template class torchscript_layer<double>;

} // namespace troupe::optim
