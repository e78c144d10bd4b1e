// A TorchScript module (a PyTorch nn.Module scripted and saved with
// torch.jit.save) as one layer of a troupe model: `--model=torchscript:FILE.pt`
// is the description {"layers": [{"type": "torchscript", "file": FILE}]}
// (optim/model_spec.hpp, docs/models.md "TorchScript modules").
//
// The module's parameters and buffers become views into troupe's flat
// vectors: every algorithm trains it as it trains a model of troupe's own
// layers, through the flat parameter vector, and libtorch computes the
// forward pass and, by autograd, the gradients straight into the flat
// gradient vector. This header does not include libtorch's; the layer exists
// only in a build with libtorch (TROUPE_HAVE_TORCH, optim/CMakeLists.txt).

#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "optim/layer.hpp"

namespace troupe::optim {

namespace detail {
template <class T>
struct torchscript_module; // optim/detail/torchscript_module.hpp
} // namespace detail

/// Whether this build of troupe has libtorch, and with it TorchScript
/// modules (a "torchscript" layer is refused without).
#ifdef TROUPE_HAVE_TORCH
inline constexpr bool have_torchscript = true;
#else
inline constexpr bool have_torchscript = false;
#endif

#ifdef TROUPE_HAVE_TORCH

/// Checks that `file` holds a TorchScript module with a forward method by
/// loading it (once per path, size and modification time: the result is
/// cached); throws std::invalid_argument "FILE: <problem>" otherwise.
void check_torchscript_file(const std::string& file);

/// Whether the module in `file` computes in training as for inference and
/// draws no random numbers, as far as its submodules' types tell (none of
/// PyTorch's Dropout, BatchNorm or InstanceNorm modules); throws as
/// check_torchscript_file. Sandblaster's full-batch objective needs it.
bool torchscript_deterministic(const std::string& file);

/// A parameter or buffer of a module: its name in the module ("0.weight",
/// "conv1.bias", "1.running_mean") and its PyTorch shape.
struct torchscript_tensor {
  std::string name;
  std::vector<std::int64_t> shape;
};

/// A TorchScript module as a layer, templated on the scalar type like every
/// layer: the module is converted to float or double (`Module::to`).
///
/// - Input: per-sample columns, read without a copy as a tensor [B, C, H, W]
///   (or [B, C] when the sample shape is {C, 1, 1}). The module must not
///   write its input in place.
/// - Output: forward must return one tensor of T's type whose first
///   dimension is the batch; its other dimensions are flattened into one
///   column per sample (copied: a [B, K] output is K x B column-major).
/// - Parameters: one range per module parameter, "<prefix>.<its name in the
///   module>", kind bias when the name ends in "bias", else weight. `bind`
///   makes each parameter a view into the flat parameter vector
///   (Tensor::set_data) and its .grad() a view into the gradient vector, so
///   autograd accumulates into troupe's buffer (zeroed before each backward).
/// - Buffers: one range per floating-point buffer (batch norm's running
///   statistics), also views. Other buffers (num_batches_tracked) stay in
///   the module, restored to the file's values by reset_buffers.
/// - Initial values: the file's (`init` and `bind` copy them in; the rng is
///   not used, so every seed starts from the module as saved).
/// - Passes: module.train() for training and calibration, module.eval() for
///   inference. A calibration pass gives batch norms (submodules with
///   running_mean, running_var and a momentum constant, as PyTorch's
///   _BatchNorm and _InstanceNorm) the equal-weight mean of the batches'
///   statistics since reset_buffers, as troupe's batch_norm; other buffers
///   move as a training pass moves them.
/// - Randomness (dropout inside the module) comes from libtorch's
///   process-wide generator, which `init` and `seed_noise` reseed.
/// - libtorch runs single-threaded (at::set_num_threads(1), process-wide):
///   the actors own the cores.
template <class T>
class torchscript_layer : public layer<T> {
public:
  /// Loads the module saved in `file`; throws std::invalid_argument "FILE:
  /// <problem>" if it cannot, if the module has no forward method, or if it
  /// has a tensor that is both a parameter and another parameter or buffer
  /// (tied weights). `input_gradient`: whether backward may be asked for the
  /// gradient of the input (then autograd tracks the input in training);
  /// false for a model's first layer, which is never asked.
  explicit torchscript_layer(const std::string& file,
                             bool input_gradient = true);
  ~torchscript_layer() override;

  torchscript_layer(const torchscript_layer&) = delete;
  torchscript_layer& operator=(const torchscript_layer&) = delete;

  std::string kind() const override {
    return "torchscript";
  }

  optim::layout input_layout() const noexcept override {
    return optim::layout::columns;
  }

  optim::layout output_layout() const noexcept override {
    return optim::layout::columns;
  }

  /// Runs the module (eval mode, no gradients) on one zero sample of shape
  /// `in` and returns {K, 1, 1}, K its outputs per sample; throws
  /// std::invalid_argument "FILE: <problem>" if that fails or the output is
  /// not as described above.
  shape setup(const shape& in) override;

  void declare(range_table& table, const std::string& prefix) override;
  void bind(T* params, T* grads) override;
  void init(rng& gen) override;
  void declare_buffers(range_table& table, const std::string& prefix) override;
  void bind_buffers(T* buffers) override;
  void reset_buffers() override;
  void seed_noise(std::uint64_t seed) override;
  void set_pass(optim::pass p) override;

  /// Throws std::runtime_error "FILE: forward: <libtorch's message>" if the
  /// module fails or returns other than one output per sample as in setup.
  void forward(const matrix<T>& in, matrix<T>& out) override;

  /// Backward of the last training forward (once); throws std::logic_error
  /// without one, or when asked for `din` with input_gradient off.
  void backward(const matrix<T>& in, const matrix<T>& out,
                const matrix<T>& dout, matrix<T>* din) override;

  /// The file the module was loaded from.
  const std::string& file() const noexcept;

  /// Whether backward may be asked for the input's gradient (see the
  /// constructor); takes effect from the next forward.
  void set_input_gradient(bool on) noexcept;

  /// The parameters, in the order of their ranges (empty ones left out).
  const std::vector<torchscript_tensor>& parameters() const noexcept;

  /// The floating-point buffers, in the order of their ranges.
  const std::vector<torchscript_tensor>& buffers() const noexcept;

private:
  std::unique_ptr<detail::torchscript_module<T>> impl_;
};

#endif // TROUPE_HAVE_TORCH

} // namespace troupe::optim
