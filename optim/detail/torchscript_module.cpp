#include "optim/detail/torchscript_module.hpp"

#include <ATen/Parallel.h>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <mutex>
#include <set>
#include <stdexcept>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace troupe::optim {

namespace detail {

/// Once per process. libtorch computes on the calling thread only: troupe's
/// actors own the cores, as Eigen stays single-threaded inside an actor.
/// And glibc keeps the memory libtorch frees unless MALLOC_*_ or
/// GLIBC_TUNABLES say otherwise: libtorch allocates a step's activations and
/// gradients afresh, and glibc gave large blocks back to the system (mmap'd
/// ones at once, the heap's top once above the trim threshold), so the next
/// step faulted their pages in again. Blocks up to 64 MiB come from the
/// heaps, which keep up to 128 MiB free at their top (M_TOP_PAD alone also
/// turns glibc's dynamic mmap threshold off, and LeNet still took 100 page
/// faults a step: docs/models.md, docs/benchmarks.md).
void process_settings() {
  static std::once_flag once;
  std::call_once(once, [] {
    at::set_num_threads(1);
    // libtorch's products may go to OpenBLAS (libblas.so.3), whose pthread
    // build starts a thread per core unless told otherwise.
    using set_threads = void (*)(int);
    if (auto f = reinterpret_cast<set_threads>(
            dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
      f(1);
#ifdef __GLIBC__
    auto unset = [](const char* name) { return std::getenv(name) == nullptr; };
    if (unset("GLIBC_TUNABLES")) {
      if (unset("MALLOC_TOP_PAD_"))
        mallopt(M_TOP_PAD, 16 << 20);
      if (unset("MALLOC_MMAP_THRESHOLD_"))
        mallopt(M_MMAP_THRESHOLD, 64 << 20);
      if (unset("MALLOC_TRIM_THRESHOLD_"))
        mallopt(M_TRIM_THRESHOLD, 128 << 20);
    }
#endif
  });
}

/// The first line of a libtorch error, without its C++ backtrace.
std::string first_line(const std::exception& e) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10 != nullptr ? c10->what_without_backtrace() : e.what();
  auto end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

torch::jit::Module load_torchscript(const std::string& file) {
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

template <class T>
torchscript_module<T>::torchscript_module(const std::string& path,
                                          bool gradient)
    : file(path), input_gradient(gradient) {
  process_settings();
  module = load_torchscript(file);
  const auto dtype = std::is_same_v<T, double> ? at::kDouble : at::kFloat;
  options = at::TensorOptions().dtype(dtype).device(at::kCPU);
  torch::NoGradGuard no_grad;
  // Module::to would convert the integer buffers too (num_batches_tracked).
  auto convert = [&](const at::Tensor& t) {
    if (t.is_floating_point() && t.scalar_type() != dtype)
      t.set_data(t.to(dtype));
  };
  for (const auto& t : module.parameters(true))
    convert(t);
  for (const auto& t : module.buffers(true))
    convert(t);
  module.eval();
  std::set<const void*> seen;
  auto unique = [&](const at::Tensor& t, const std::string& name) {
    if (!seen.insert(t.unsafeGetTensorImpl()).second)
      throw std::invalid_argument(file + ": " + name
                                  + " is the tensor of another parameter or "
                                    "buffer (tied weights are not supported)");
  };
  for (const auto& p : module.named_parameters(true)) {
    unique(p.value, p.name);
    if (p.value.numel() == 0)
      continue;
    param_info.push_back({p.name, sizes_of(p.value)});
    params.push_back(p.value);
    initial_params.push_back(p.value.detach().clone().contiguous());
  }
  for (const auto& b : module.named_buffers(true)) {
    unique(b.value, b.name);
    if (!b.value.is_floating_point()) {
      counters.push_back(b.value);
      initial_counters.push_back(b.value.detach().clone());
      continue;
    }
    if (b.value.numel() == 0)
      continue;
    buffer_info.push_back({b.name, sizes_of(b.value)});
    buffers.push_back(b.value);
    initial_buffers.push_back(b.value.detach().clone().contiguous());
  }
  // Batch norms, found by their running statistics and momentum constant.
  auto index = [](const std::vector<torchscript_tensor>& xs,
                  const std::string& name) -> long {
    for (std::size_t i = 0; i < xs.size(); ++i)
      if (xs[i].name == name)
        return static_cast<long>(i);
    return -1;
  };
  for (const auto& m : module.named_modules()) {
    const auto type = m.value.type();
    if (!type->hasConstant("momentum"))
      continue;
    const std::string prefix = m.name.empty() ? "" : m.name + ".";
    const long mean = index(buffer_info, prefix + "running_mean");
    const long var = index(buffer_info, prefix + "running_var");
    if (mean < 0 || var < 0)
      continue;
    long counter = -1;
    if (m.value.hasattr("num_batches_tracked")) {
      auto c = m.value.attr("num_batches_tracked");
      for (std::size_t i = 0; c.isTensor() && i < counters.size(); ++i)
        if (counters[i].is_same(c.toTensor()))
          counter = static_cast<long>(i);
    }
    auto momentum = type->getConstant("momentum");
    norms.push_back({static_cast<std::size_t>(mean),
                     static_cast<std::size_t>(var), counter,
                     momentum.isDouble() ? momentum.toDouble() : 0.0});
  }
}

template <class T>
at::Tensor torchscript_module<T>::run(const at::Tensor& x) {
  c10::IValue y;
  try {
    y = module.forward({x});
  } catch (const std::exception& e) {
    throw std::runtime_error(file + ": forward on a batch of shape "
                             + sizes_text(sizes_of(x)) + ": " + first_line(e));
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
    throw std::runtime_error(
        file + ": forward on a batch of shape " + sizes_text(sizes_of(x))
        + " returns " + sizes_text(sizes_of(t)) + ", not [" + std::to_string(b)
        + ", ...] of " + std::to_string(outputs) + " per sample");
  return t.contiguous();
}

template <class T>
at::Tensor torchscript_module<T>::calibrate(const at::Tensor& x) {
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

template struct torchscript_module<float>;
template struct torchscript_module<double>;

} // namespace detail

void check_torchscript_file(const std::string& file) {
  static std::mutex mutex;
  static std::set<std::string> checked;
  std::error_code ec;
  auto size = std::filesystem::file_size(file, ec);
  auto time = std::filesystem::last_write_time(file, ec);
  const std::string key = file + '\0' + std::to_string(size) + '\0'
                          + std::to_string(time.time_since_epoch().count());
  {
    std::lock_guard<std::mutex> guard{mutex};
    if (!ec && checked.count(key) > 0)
      return;
  }
  detail::load_torchscript(file);
  std::lock_guard<std::mutex> guard{mutex};
  if (!ec)
    checked.insert(key);
}

bool torchscript_deterministic(const std::string& file) {
  for (const auto& m : detail::load_torchscript(file).named_modules()) {
    const auto name = m.value.type()->name();
    const auto type = name ? name->qualifiedName() : std::string{};
    for (const char* kind : {"Dropout", "BatchNorm", "InstanceNorm"})
      if (type.find(kind) != std::string::npos)
        return false;
  }
  return true;
}

} // namespace troupe::optim
