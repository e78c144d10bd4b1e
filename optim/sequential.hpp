#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "optim/layer.hpp"
#include "optim/loss.hpp"
#include "optim/range_table.hpp"
#include "optim/types.hpp"

namespace troupe::optim {

/// A sequential model whose parameters live in one contiguous flat buffer
/// (and gradients in a second one of the same layout); layers are views into
/// it. Assemble with `add`, then `finalize` once:
///
///     sequential<float> m{shape{1, 28, 28}};
///     conv2d_options conv;
///     conv.out_channels = 6;
///     conv.kernel = 5;
///     conv.padding = 2;
///     m.add<conv2d<float>>(conv);
///     m.add<relu<float>>();
///     ...
///     m.finalize();
///     m.init(seed);
template <class T>
class sequential {
public:
  explicit sequential(shape input);

  sequential(const sequential&) = delete;
  sequential& operator=(const sequential&) = delete;
  sequential(sequential&&) = default;
  sequential& operator=(sequential&&) = default;

  /// Appends a layer constructed from `args`; returns *this. Only before
  /// `finalize`.
  template <class Layer, class... Ts>
  sequential& add(Ts&&... args) {
    return add(std::make_unique<Layer>(std::forward<Ts>(args)...));
  }

  /// Appends a layer; returns *this. Only before `finalize`.
  sequential& add(std::unique_ptr<layer<T>> ptr);

  /// Computes shapes, lays out the flat buffers (zeroed) and binds every
  /// layer. Layers are named "<kind><index>" counting per kind from 1 (e.g.
  /// "conv1", "dense2"), their ranges "<name>.weight" and "<name>.bias".
  /// Throws std::invalid_argument naming the layer and the problem on an
  /// unusable shape or a layout mismatch (see `layer`), and when there are no
  /// layers; std::logic_error if called twice.
  void finalize();

  /// Finalizes only layers `[first, last)` as one stage of a pipeline
  /// (optim/pipeline.hpp): every layer is set up and named as in the whole
  /// model (so "dense3.weight" keeps its name), but only the stage's layers
  /// are kept and get parameters. The stage's input is the whole model's
  /// activation before layer `first`, in the layout the model has there;
  /// its parameters are the slice `[param_offset(), param_offset() + size())`
  /// of the whole model's flat vector. Throws as finalize() does, and
  /// std::invalid_argument unless `first < last <= ` the number of layers.
  void finalize(std::size_t first, std::size_t last);

  /// For a stage: where its parameters start in the whole model's flat
  /// vector, and the whole model's parameter count (0 and size() for a
  /// whole model).
  std::size_t param_offset() const noexcept {
    return param_offset_;
  }
  std::size_t full_size() const noexcept {
    return full_size_;
  }

  /// Whether this stage ends the model (true for a whole model): only the
  /// last stage computes the loss.
  bool ends_model() const noexcept {
    return ends_model_;
  }

  /// Initializes all parameters from one optim::rng seeded with `seed`,
  /// layer by layer in order (same seed, bitwise the same values), and
  /// resets the buffers.
  void init(std::uint64_t seed);

  /// The loss loss_and_gradient() uses (cross-entropy unless set).
  loss_kind loss() const noexcept {
    return loss_;
  }
  void set_loss(loss_kind k) noexcept {
    loss_ = k;
  }

  // -- flat buffers -----------------------------------------------------------

  /// Number of parameters.
  std::size_t size() const noexcept {
    return params_.size() - pad_;
  }

  T* params() noexcept {
    return params_.data() + pad_;
  }
  const T* params() const noexcept {
    return params_.data() + pad_;
  }
  T* grads() noexcept {
    return grads_.data() + pad_;
  }
  const T* grads() const noexcept {
    return grads_.data() + pad_;
  }

  /// The named-range table of the flat parameter vector.
  const range_table& ranges() const noexcept {
    return table_;
  }

  /// The buffers: state that gradients do not train (batch norm's running
  /// statistics), in a flat vector of its own. Algorithms exchange only
  /// params(); buffers are estimated from the parameters where they are
  /// needed (`calibrate`, docs/algorithms.md "Buffers").
  std::size_t buffer_size() const noexcept {
    return buffers_.size() - buffer_pad_;
  }
  T* buffers() noexcept {
    return buffers_.data() + buffer_pad_;
  }
  const T* buffers() const noexcept {
    return buffers_.data() + buffer_pad_;
  }
  const range_table& buffer_ranges() const noexcept {
    return buffer_table_;
  }

  /// Sets the buffers to their initial values and restarts a calibration.
  void reset_buffers();

  /// Seeds the layers' randomness (dropout masks) from `seed`, layer by
  /// layer; a replica seeds its model apart from the others'. A stage's
  /// layers get the seeds they get in the whole model.
  void seed_noise(std::uint64_t seed);

  /// One step of estimating the buffers from the current parameters
  /// (PreciseBN): a forward pass over `x` in the calibration pass, which
  /// adds the batch's statistics to a cumulative mean. Start with
  /// reset_buffers(); the estimate weighs every batch alike.
  void calibrate(const matrix<T>& x);

  // -- computation ------------------------------------------------------------

  /// Forward pass for inference (dropout off, batch norm on its buffers);
  /// returns the outputs (`outputs x batch`), valid until the next call.
  /// Throws std::invalid_argument if `x` does not have
  /// `input_shape().size()` rows, std::logic_error before `finalize`.
  const matrix<T>& forward(const matrix<T>& x);

  /// Forward and backward pass of a training step on a batch (`x`: input
  /// features x batch) with the model's loss; fills grads() and returns the
  /// mean loss. The first layer is asked for no input gradient.
  /// Steady-state calls with the same batch size do not reallocate any
  /// buffer of the model.
  T loss_and_gradient(const matrix<T>& x, batch_targets targets);

  /// The same for a stage that ends the model (ends_model()), for one
  /// micro-batch of a larger batch: the gradient of the micro-batch's mean
  /// loss times `scale` (its share of the batch) is backpropagated, so the
  /// stages' gradients summed over the micro-batches are the batch's; writes
  /// dLoss/dx into `*din` unless null (the previous stage's gradient).
  /// Returns the micro-batch's mean loss, unscaled.
  T loss_and_gradient(const matrix<T>& x, batch_targets targets, matrix<T>* din,
                      T scale);

  /// Forward pass of a training step (dropout on, batch norm on batch
  /// statistics) that keeps what backward() needs; returns the outputs,
  /// valid until the next call.
  const matrix<T>& forward_training(const matrix<T>& x);

  /// Backward pass after forward_training(x) with the same `x`: given `dout`
  /// = dLoss/d(outputs), overwrites grads() and writes dLoss/dx into `*din`
  /// unless null. Throws std::invalid_argument if `dout` does not have the
  /// outputs' shape.
  void backward(const matrix<T>& x, const matrix<T>& dout, matrix<T>* din);

  /// The same with class labels only.
  T loss_and_gradient(const matrix<T>& x, const std::int32_t* labels) {
    return loss_and_gradient(x, batch_targets{labels, nullptr});
  }

  /// Shape of one input sample.
  shape input_shape() const noexcept {
    return input_;
  }

  /// Shape of one output sample (the input shape before `finalize`).
  shape output_shape() const noexcept {
    return shapes_.empty() ? input_ : shapes_.back();
  }

  /// The layers, in order.
  const std::vector<std::unique_ptr<layer<T>>>& layers() const noexcept {
    return layers_;
  }

  /// After loss_and_gradient: dLoss/d(outputs of layer i), outputs x
  /// batch. With layer_input, a dense layer's sufficient factors: its weight
  /// gradient is output_gradient(i) * layer_input(i, x)^T
  /// (optim/sufficient_factors.hpp).
  const matrix<T>& output_gradient(std::size_t i) const {
    return i + 1 == layers_.size() ? dlogits_ : deltas_.at(i + 1);
  }

  /// The input of layer i in the last pass on batch `x` (x itself for the
  /// first layer), inputs x batch.
  const matrix<T>& layer_input(std::size_t i, const matrix<T>& x) const {
    return i == 0 ? x : acts_.at(i - 1);
  }

  /// Layer names as assigned by finalize().
  const std::vector<std::string>& names() const noexcept {
    return names_;
  }

private:
  shape input_;
  std::vector<shape> shapes_; // [i]: input of layer i; back(): model output
  std::vector<std::unique_ptr<layer<T>>> layers_;
  std::vector<std::string> names_;
  range_table table_;
  range_table buffer_table_;
  flat_storage<T> params_;
  flat_storage<T> grads_;
  flat_storage<T> buffers_;
  loss_kind loss_ = loss_kind::cross_entropy;
  optim::pass pass_ = optim::pass::inference;
  std::vector<matrix<T>> acts_; // acts_[i] = output of layer i
  matrix<T> dlogits_;
  // deltas_[i] = dLoss/d(input of layer i), i >= 1. One buffer per layer
  // rather than two alternating ones: a matrix reallocates whenever its size
  // changes, and consecutive layers have inputs of different sizes.
  std::vector<matrix<T>> deltas_;
  bool finalized_ = false;
  bool ends_model_ = true;
  std::size_t param_offset_ = 0;
  std::size_t full_size_ = 0;
  std::size_t first_layer_ = 0; // a stage's first layer in the whole model
  // A stage's buffers start this many values into their storage, so that
  // its weights have the alignment they have in the whole model: vectorized
  // kernels peel by alignment, and the stage's sums must be bit-equal.
  std::size_t pad_ = 0;
  std::size_t buffer_pad_ = 0;

  const matrix<T>& run(const matrix<T>& x, optim::pass p);
  void backprop(const matrix<T>& x, const matrix<T>* dout, matrix<T>* din);
};

/// The most parameters a model may have (4 GiB of floats) and the most
/// values one sample's activation may have after a layer: finalize()
/// refuses a larger model before allocating it.
inline constexpr std::size_t max_model_parameters = std::size_t{1} << 30;
inline constexpr std::size_t max_activation_values = std::size_t{1} << 24;

/// Names of the built-in models: "logreg", "mlp", "lenet".
const std::vector<std::string>& model_names();

/// Builds (and finalizes, not initializes) a built-in model, or a model
/// description (optim/model_spec.hpp: build_model), for 28x28 single
/// channel inputs and 10 classes by default. The built-ins are the
/// descriptions models/*.json:
/// - logreg: dense 784-10
/// - mlp: dense 784-256, relu, dense 256-128, relu, dense 128-10
/// - lenet: conv5x5 1->6 pad 2, relu, maxpool 2, conv5x5 6->16, relu,
///   maxpool 2, flatten, dense 400-120, relu, dense 120-84, relu, dense 84-10
/// Throws std::invalid_argument for an unknown name, listing the known ones,
/// and for a description it cannot build, naming the layer and the problem.
template <class T>
sequential<T> make_model(const std::string& name, shape input = {1, 28, 28},
                         int classes = 10);

} // namespace troupe::optim
