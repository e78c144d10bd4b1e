// The libtorch side of optim/torchscript_layer.hpp: a loaded module, the
// tensors troupe binds, and its forward pass. Includes libtorch's headers;
// compiled only with TROUPE_HAVE_TORCH.

#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <torch/script.h>
#include <vector>

#include "optim/torchscript_layer.hpp"

namespace troupe::optim::detail {

/// Once per process: libtorch on one thread, and glibc's heap padding
/// (torchscript_module.cpp says why).
void process_settings();

/// The module in `file` with its forward method; throws
/// std::invalid_argument "FILE: <problem>".
torch::jit::Module load_torchscript(const std::string& file);

/// The first line of an error (a libtorch one without its backtrace).
std::string first_line(const std::exception& e);

/// A tensor's sizes, and "[a, b, c]".
std::vector<std::int64_t> sizes_of(const at::Tensor& t);
std::string sizes_text(const std::vector<std::int64_t>& s);

/// A batch norm's running statistics, for calibration: indices into the
/// buffers (`counter`: into the counters, -1 if none) and its momentum (0:
/// None, a cumulative average).
struct running_stats {
  std::size_t mean, var;
  long counter;
  double momentum;
};

/// A loaded module and what the layer keeps of it (see torchscript_layer).
template <class T>
struct torchscript_module {
  /// Loads `file` (load_torchscript), converts its floating-point tensors to
  /// T's type and collects its parameters, buffers and batch norms.
  torchscript_module(const std::string& file, bool input_gradient);

  std::string file;
  torch::jit::Module module;
  bool input_gradient = true;
  at::TensorOptions options;
  shape in;
  std::size_t outputs = 0; ///< per sample
  std::vector<torchscript_tensor> param_info, buffer_info;
  std::vector<at::Tensor> params, buffers; ///< the module's own tensors
  std::vector<at::Tensor> initial_params, initial_buffers; ///< the file's
  std::vector<at::Tensor> counters, initial_counters;      ///< other buffers
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

  /// A view of `shape` at base + offset (a parameter's or buffer's place in
  /// a flat vector).
  at::Tensor view(T* base, std::size_t offset,
                  const std::vector<std::int64_t>& shape) const {
    return torch::from_blob(base + offset, shape, options);
  }

  /// Copies the file's values `from` to their places in a flat vector.
  void copy_initial(const std::vector<at::Tensor>& from, T* base,
                    const std::vector<std::size_t>& offsets) const {
    for (std::size_t i = 0; i < from.size(); ++i)
      std::memcpy(base + offsets[i], from[i].template data_ptr<T>(),
                  static_cast<std::size_t>(from[i].numel()) * sizeof(T));
  }

  /// The module's forward pass on `x`, its output checked and contiguous;
  /// throws std::runtime_error "FILE: ...".
  at::Tensor run(const at::Tensor& x);

  /// A forward pass of the calibration (docs/models.md): the batch norms'
  /// running statistics become the mean of the batches' since the reset.
  at::Tensor calibrate(const at::Tensor& x);
};

extern template struct torchscript_module<float>;
extern template struct torchscript_module<double>;

} // namespace troupe::optim::detail
