#include "optim/torchscript_layer.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>

#include <ATen/Parallel.h>
#include <torch/script.h>

namespace troupe::optim {

namespace {

/// libtorch computes on the calling thread only: troupe's actors own the
/// cores, as Eigen stays single-threaded inside an actor.
void single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { at::set_num_threads(1); });
}

/// The first line of a libtorch error, without its C++ backtrace.
std::string first_line(const std::exception& e) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10 != nullptr ? c10->what_without_backtrace() : e.what();
  auto end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

torch::jit::Module load_module(const std::string& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw std::invalid_argument(file + ": no such file");
  torch::jit::Module m;
  try {
    m = torch::jit::load(file, torch::kCPU);
  } catch (const std::exception& e) {
    throw std::invalid_argument(file
                                + ": not a TorchScript module saved with "
                                  "torch.jit.save ("
                                + first_line(e) + ")");
  }
  if (!m.find_method("forward"))
    throw std::invalid_argument(file + ": the module has no forward method");
  return m;
}

std::vector<std::int64_t> sizes_of(const at::Tensor& t) {
  return {t.sizes().begin(), t.sizes().end()};
}

std::string sizes_text(const std::vector<std::int64_t>& s) {
  std::string out = "[";
  for (auto x : s)
    out += (out.size() > 1 ? ", " : "") + std::to_string(x);
  return out + "]";
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size()
         && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

} // namespace

void check_torchscript_file(const std::string& file) {
  static std::mutex mutex;
  static std::set<std::string> checked;
  std::error_code ec;
  auto size = std::filesystem::file_size(file, ec);
  auto time = std::filesystem::last_write_time(file, ec);
  const std::string key
      = file + '\0' + std::to_string(size) + '\0'
        + std::to_string(time.time_since_epoch().count());
  {
    std::lock_guard<std::mutex> guard{mutex};
    if (!ec && checked.count(key) > 0)
      return;
  }
  load_module(file);
  std::lock_guard<std::mutex> guard{mutex};
  if (!ec)
    checked.insert(key);
}

bool torchscript_deterministic(const std::string& file) {
  for (const auto& m : load_module(file).named_modules()) {
    const auto name = m.value.type()->name();
    const auto type = name ? name->qualifiedName() : std::string{};
    for (const char* kind : {"Dropout", "BatchNorm", "InstanceNorm"})
      if (type.find(kind) != std::string::npos)
        return false;
  }
  return true;
}

/// A batch norm's running statistics, for calibration: indices into the
/// buffers (`counter`: into the counters, -1 if none) and its momentum (0:
/// None, a cumulative average).
struct running_stats {
  std::size_t mean, var;
  long counter;
  double momentum;
};

template <class T>
struct torchscript_layer<T>::impl {
  std::string file;
  torch::jit::Module module;
  bool input_gradient = true;
  at::TensorOptions options;
  shape in;
  std::size_t outputs = 0; ///< per sample
  std::vector<torchscript_tensor> param_info, buffer_info;
  std::vector<at::Tensor> params, buffers; ///< the module's own tensors
  std::vector<at::Tensor> initial_params, initial_buffers; ///< the file's
  std::vector<at::Tensor> counters, initial_counters; ///< other buffers
  std::vector<std::size_t> param_offsets, buffer_offsets;
  std::vector<running_stats> norms;
  T* param_base = nullptr;
  T* grads = nullptr;
  std::size_t param_total = 0;
  T* buffer_base = nullptr;
  optim::pass pass = optim::pass::inference;
  long calibrated = 0;      ///< batches of the calibration since the reset
  at::Tensor input, output; ///< of the last training forward

  /// The input batch as a tensor, without a copy.
  at::Tensor wrap(const matrix<T>& x) const {
    const std::int64_t b = x.cols();
    std::vector<std::int64_t> s{b, in.c};
    if (in.h * in.w > 1)
      s = {b, in.c, in.h, in.w};
    return torch::from_blob(const_cast<T*>(x.data()), s, options);
  }

  at::Tensor view(T* base, std::size_t offset,
                  const std::vector<std::int64_t>& shape) const {
    return torch::from_blob(base + offset, shape, options);
  }

  void copy_initial(const std::vector<at::Tensor>& from, T* base,
                    const std::vector<std::size_t>& offsets) const {
    for (std::size_t i = 0; i < from.size(); ++i)
      std::memcpy(base + offsets[i], from[i].template data_ptr<T>(),
                  static_cast<std::size_t>(from[i].numel()) * sizeof(T));
  }

  at::Tensor run(const at::Tensor& x);
  at::Tensor calibrate(const at::Tensor& x);
};

template <class T>
at::Tensor torchscript_layer<T>::impl::run(const at::Tensor& x) {
  c10::IValue y;
  try {
    y = module.forward({x});
  } catch (const std::exception& e) {
    throw std::runtime_error(file + ": forward on a batch of shape "
                             + sizes_text(sizes_of(x)) + ": "
                             + first_line(e));
  }
  if (!y.isTensor())
    throw std::runtime_error(file + ": forward must return one tensor, not "
                             + y.tagKind());
  auto t = y.toTensor();
  if (t.scalar_type() != options.dtype().toScalarType())
    throw std::runtime_error(file + ": forward returns "
                             + std::string{c10::toString(t.scalar_type())}
                             + ", not "
                             + c10::toString(options.dtype().toScalarType()));
  const auto b = x.size(0);
  if (t.dim() < 1 || t.size(0) != b
      || static_cast<std::size_t>(t.numel())
             != outputs * static_cast<std::size_t>(b))
    throw std::runtime_error(file + ": forward on a batch of shape "
                             + sizes_text(sizes_of(x)) + " returns "
                             + sizes_text(sizes_of(t)) + ", not ["
                             + std::to_string(b) + ", ...] of "
                             + std::to_string(outputs) + " per sample");
  return t.contiguous();
}

template <class T>
at::Tensor torchscript_layer<T>::impl::calibrate(const at::Tensor& x) {
  // With its running statistics at 0, a batch norm's training forward
  // leaves momentum * (the batch's statistic) in them (factor 1 for a
  // cumulative average whose counter is 0): divided by it, the batch's
  // statistic, averaged here with equal weights.
  const long k = ++calibrated;
  std::vector<at::Tensor> acc;
  std::vector<at::Tensor> saved_counters;
  for (const auto& c : counters)
    saved_counters.push_back(c.clone());
  for (const auto& n : norms) {
    for (auto i : {n.mean, n.var}) {
      acc.push_back(buffers[i].clone());
      buffers[i].zero_();
    }
    if (n.momentum == 0 && n.counter >= 0)
      counters[static_cast<std::size_t>(n.counter)].zero_();
  }
  auto y = run(x);
  std::size_t a = 0;
  for (const auto& n : norms)
    for (auto i : {n.mean, n.var}) {
      const double m = n.momentum == 0 ? 1.0 : n.momentum;
      auto batch = buffers[i] / m;
      buffers[i].copy_(acc[a] + (batch - acc[a]) / static_cast<double>(k));
      ++a;
    }
  for (std::size_t i = 0; i < counters.size(); ++i)
    counters[i].copy_(saved_counters[i]);
  return y;
}

template <class T>
torchscript_layer<T>::torchscript_layer(const std::string& file,
                                        bool input_gradient)
    : impl_(std::make_unique<impl>()) {
  single_threaded();
  auto& s = *impl_;
  s.file = file;
  s.input_gradient = input_gradient;
  s.module = load_module(file);
  const auto dtype = std::is_same_v<T, double> ? at::kDouble : at::kFloat;
  s.options = at::TensorOptions().dtype(dtype).device(at::kCPU);
  torch::NoGradGuard no_grad;
  // Module::to would convert the integer buffers too (num_batches_tracked).
  auto convert = [&](const at::Tensor& t) {
    if (t.is_floating_point() && t.scalar_type() != dtype)
      t.set_data(t.to(dtype));
  };
  for (const auto& t : s.module.parameters(true))
    convert(t);
  for (const auto& t : s.module.buffers(true))
    convert(t);
  s.module.eval();
  std::set<const void*> seen;
  auto unique = [&](const at::Tensor& t, const std::string& name) {
    if (!seen.insert(t.unsafeGetTensorImpl()).second)
      throw std::invalid_argument(file + ": " + name
                                  + " is the tensor of another parameter or "
                                    "buffer (tied weights are not supported)");
  };
  for (const auto& p : s.module.named_parameters(true)) {
    unique(p.value, p.name);
    if (p.value.numel() == 0)
      continue;
    s.param_info.push_back({p.name, sizes_of(p.value)});
    s.params.push_back(p.value);
    s.initial_params.push_back(p.value.detach().clone().contiguous());
  }
  for (const auto& b : s.module.named_buffers(true)) {
    unique(b.value, b.name);
    if (!b.value.is_floating_point()) {
      s.counters.push_back(b.value);
      s.initial_counters.push_back(b.value.detach().clone());
      continue;
    }
    if (b.value.numel() == 0)
      continue;
    s.buffer_info.push_back({b.name, sizes_of(b.value)});
    s.buffers.push_back(b.value);
    s.initial_buffers.push_back(b.value.detach().clone().contiguous());
  }
  // Batch norms, found by their running statistics and momentum constant.
  auto index = [](const std::vector<torchscript_tensor>& xs,
                  const std::string& name) -> long {
    for (std::size_t i = 0; i < xs.size(); ++i)
      if (xs[i].name == name)
        return static_cast<long>(i);
    return -1;
  };
  for (const auto& m : s.module.named_modules()) {
    const auto type = m.value.type();
    if (!type->hasConstant("momentum"))
      continue;
    const std::string prefix = m.name.empty() ? "" : m.name + ".";
    const long mean = index(s.buffer_info, prefix + "running_mean");
    const long var = index(s.buffer_info, prefix + "running_var");
    if (mean < 0 || var < 0)
      continue;
    long counter = -1;
    if (m.value.hasattr("num_batches_tracked")) {
      auto c = m.value.attr("num_batches_tracked");
      for (std::size_t i = 0; c.isTensor() && i < s.counters.size(); ++i)
        if (s.counters[i].is_same(c.toTensor()))
          counter = static_cast<long>(i);
    }
    auto momentum = type->getConstant("momentum");
    s.norms.push_back({static_cast<std::size_t>(mean),
                       static_cast<std::size_t>(var), counter,
                       momentum.isDouble() ? momentum.toDouble() : 0.0});
  }
}

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
    y = s.pass == optim::pass::calibration && !s.norms.empty()
            ? s.calibrate(x)
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
  const auto g = torch::from_blob(const_cast<T*>(dout.data()),
                                  s.output.sizes(), s.options);
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
    T* at = s.grads + s.param_offsets[i];
    auto& grad = s.params[i].mutable_grad();
    if (grad.defined() && grad.data_ptr() == at)
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
