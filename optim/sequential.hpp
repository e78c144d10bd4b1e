#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "optim/layer.hpp"
#include "optim/range_table.hpp"
#include "optim/types.hpp"

namespace troupe::optim {

/// A sequential model whose parameters live in one contiguous flat buffer
/// (and gradients in a second one of the same layout); layers are views into
/// it. Assemble with `add`, then `finalize` once:
///
///     sequential<float> m{shape{1, 28, 28}};
///     m.add<conv2d<float>>(conv2d_options{.out_channels = 6, .kernel = 5,
///                                         .padding = 2});
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

  /// Computes shapes, lays out the flat buffers and binds every layer.
  /// Layers are named "<kind><index>" counting per kind from 1 (e.g.
  /// "conv1", "dense2"). Throws std::invalid_argument on a shape mismatch.
  void finalize();

  /// Initializes all parameters from `seed` (same seed, same values).
  void init(std::uint64_t seed);

  // -- flat buffers -----------------------------------------------------------

  /// Number of parameters.
  std::size_t size() const noexcept {
    return params_.size();
  }

  T* params() noexcept {
    return params_.data();
  }
  const T* params() const noexcept {
    return params_.data();
  }
  T* grads() noexcept {
    return grads_.data();
  }
  const T* grads() const noexcept {
    return grads_.data();
  }

  /// The named-range table of the flat parameter vector.
  const range_table& ranges() const noexcept {
    return table_;
  }

  // -- computation ------------------------------------------------------------

  /// Forward pass; returns the logits (`classes x batch`), valid until the
  /// next call.
  const matrix<T>& forward(const matrix<T>& x);

  /// Forward and backward pass on a batch (`x`: input features x batch) with
  /// softmax cross-entropy; fills grads() and returns the mean loss.
  T loss_and_gradient(const matrix<T>& x, const std::int32_t* labels);

  /// Input and output shapes.
  shape input_shape() const noexcept {
    return input_;
  }
  shape output_shape() const noexcept;

  /// The layers, in order.
  const std::vector<std::unique_ptr<layer<T>>>& layers() const noexcept {
    return layers_;
  }

  /// Layer names as assigned by finalize().
  const std::vector<std::string>& names() const noexcept {
    return names_;
  }

private:
  shape input_;
  std::vector<shape> shapes_; // shapes_[i] = input shape of layer i
  std::vector<std::unique_ptr<layer<T>>> layers_;
  std::vector<std::string> names_;
  range_table table_;
  flat_storage<T> params_;
  flat_storage<T> grads_;
  std::vector<matrix<T>> acts_; // acts_[i] = output of layer i
  matrix<T> dlogits_;
  matrix<T> delta_[2]; // ping-pong buffers for dLoss/dactivation
  bool finalized_ = false;
};

/// Names of the built-in models: "logreg", "mlp", "lenet".
const std::vector<std::string>& model_names();

/// Builds (and finalizes, not initializes) a built-in model for 28x28 single
/// channel inputs and 10 classes:
/// - logreg: dense 784-10
/// - mlp: dense 784-256, relu, dense 256-128, relu, dense 128-10
/// - lenet: conv5x5 1->6 pad 2, relu, maxpool 2, conv5x5 6->16, relu,
///   maxpool 2, flatten, dense 400-120, relu, dense 120-84, relu, dense 84-10
/// Throws std::invalid_argument for an unknown name, listing the known ones.
template <class T>
sequential<T> make_model(const std::string& name, shape input = {1, 28, 28},
                         int classes = 10);

} // namespace troupe::optim
