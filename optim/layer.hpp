#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "optim/range_table.hpp"
#include "optim/rng.hpp"
#include "optim/types.hpp"

namespace troupe::optim {

/// How a layer's activations are laid out in memory (see `layer`).
enum class layout {
  columns, ///< one column per sample, (C, H, W) within a column
  planes,  ///< planes ordered (C, B, H, W)
  same     ///< input: either; output: as the input
};

/// What a forward pass is for: layers whose forward differs between
/// training and inference (dropout, batch normalization) read it.
enum class pass {
  inference,  ///< evaluation: dropout off, batch norm uses its buffers
  training,   ///< a training step: dropout on, batch norm uses batch stats
  calibration ///< estimating the buffers: as training, and batch norm adds
              ///< the batch's statistics to a cumulative mean in its buffers
};

/// A differentiable layer of a sequential model, templated on the scalar type
/// (float for training, double for gradient checks); implementations are
/// explicitly instantiated for both.
///
/// Layout contract: activations are `matrix<T>` with one column per sample
/// (`features x batch`). Spatial layers (conv2d, max_pool2d, and relu between
/// them) store their activations channel-major across the batch, i.e. the
/// memory of the matrix is planes ordered (C, B, H, W); `flatten` converts to
/// per-sample columns in (C, H, W) order. With one input channel both layouts
/// coincide, so images enter as plain columns. A layer states what it needs
/// and produces through `input_layout` and `output_layout`; the model checks
/// the chain once in `finalize`.
///
/// Parameters are not owned: the model reserves ranges in one flat vector
/// (`declare`) and hands the layer pointers into the parameter and gradient
/// buffers (`bind`); weights and gradients are `Eigen::Map` views.
template <class T>
class layer {
public:
  virtual ~layer() = default;

  /// Short kind name, e.g. "dense".
  virtual std::string kind() const = 0;

  /// The layout this layer reads (`same`: either).
  virtual optim::layout input_layout() const noexcept {
    return optim::layout::same;
  }

  /// The layout this layer writes (`same`: as its input).
  virtual optim::layout output_layout() const noexcept {
    return optim::layout::same;
  }

  /// Records the shape of one input sample and returns the shape of one
  /// output sample; called once by the model before `declare`. Throws
  /// std::invalid_argument naming the problem if the input shape is unusable
  /// (the model prefixes the layer's name).
  virtual shape setup(const shape& in) = 0;

  /// Reserves this layer's parameter ranges as "<prefix>.weight" and
  /// "<prefix>.bias"; called once by the model with the input shape known.
  virtual void declare(range_table& table, const std::string& prefix) {
    // nop: layers without parameters
  }

  /// Points the layer at its parameters and gradients: `params` and `grads`
  /// are the starts of the first range this layer declared.
  virtual void bind(T* params, T* grads) {
    // nop
  }

  /// Initializes the bound parameters (PyTorch's default: uniform in
  /// +-1/sqrt(fan_in) for weights and biases).
  virtual void init(rng& gen) {
    // nop
  }

  /// Reserves this layer's buffers (state that is not trained by gradients,
  /// e.g. batch norm's running statistics) as "<prefix>.<name>" in the
  /// model's buffer table; called once, after `declare`.
  virtual void declare_buffers(range_table& table, const std::string& prefix) {
    // nop: layers without buffers
  }

  /// Points the layer at its buffers (the start of its first buffer range).
  virtual void bind_buffers(T* buffers) {
    // nop
  }

  /// Sets the buffers to their initial values (batch norm: mean 0, variance
  /// 1) and restarts a calibration.
  virtual void reset_buffers() {
    // nop
  }

  /// Seeds the layer's own randomness (dropout's masks); replicas of one
  /// model seed theirs apart. `init` seeds it from the model's seed.
  virtual void seed_noise(std::uint64_t seed) {
    // nop: deterministic layers
  }

  /// Selects what the following forward passes are for.
  virtual void set_pass(optim::pass p) {
    // nop: layers that compute the same in every pass
  }

  /// Computes `out` from `in` (`in.cols()` samples). Resizes `out` only if
  /// its size differs, so steady-state steps do not allocate.
  virtual void forward(const matrix<T>& in, matrix<T>& out) = 0;

  /// Given the forward pair (`in`, `out`) and `dout` = dLoss/dout, writes
  /// (overwrites) the parameter gradients and, if `din` is not null,
  /// dLoss/din into `*din`.
  virtual void backward(const matrix<T>& in, const matrix<T>& out,
                        const matrix<T>& dout, matrix<T>* din)
      = 0;
};

} // namespace troupe::optim
