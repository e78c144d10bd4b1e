#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace troupe::optim {

class state_writer;
class state_reader;

/// Named settings of a first-order optimizer (defaults as in PyTorch).
struct optimizer_options {
  std::string name = "sgd";  ///< sgd | momentum | nesterov | adagrad | adam
                             ///< | novograd | delayed-nesterov
  double momentum = 0.9;     ///< momentum / nesterov / delayed-nesterov
  double weight_decay = 0.0; ///< L2 penalty added to the gradient (coupled;
                             ///< novograd: to the normalized gradient)
  double beta1 = 0.9;        ///< adam, novograd
  double beta2 = 0.999;      ///< adam, novograd
  double eps = 1e-8;         ///< adam, adagrad, novograd
  std::size_t delay = 1;     ///< delayed-nesterov: steps a momentum update
  double activation = 0.0;   ///< delayed-nesterov: the momentum's share
                             ///< applied between its updates, in [0, 1]
  /// novograd: the sizes of the layers (parameter tensors) in order, which
  /// must add up to the parameters' count; empty: one layer of them all.
  std::vector<std::size_t> layers{};
};

/// The options for the parameters [offset, offset + size) of a model whose
/// layers `opts.layers` lists: its layers clipped to that slice (a layer cut
/// by an end keeps its part there). Unchanged without layers.
optimizer_options for_slice(const optimizer_options& opts, std::size_t offset,
                            std::size_t size);

/// A first-order optimizer with its per-run state, applied to a flat
/// parameter vector: `step(params, grads, lr)` updates `params` in place.
template <class T>
class optimizer {
public:
  virtual ~optimizer() = default;

  /// The name it was made with.
  virtual std::string name() const = 0;

  /// Applies one update with learning rate `lr` to n parameters; throws
  /// std::invalid_argument if n is not the size it was made for.
  virtual void step(T* params, const T* grads, std::size_t n, double lr) = 0;

  /// Clears the state (momentum buffers, accumulators, step count).
  virtual void reset() = 0;

  /// Writes the name, options, size and state (momentum buffers,
  /// accumulators, step count) as tensors and metadata named `prefix` + field.
  virtual void save(state_writer& w, const std::string& prefix) const = 0;

  /// Reads state that save() wrote; throws data_error naming the file and the
  /// tensor or metadata key if it is missing or does not fit this optimizer
  /// (another name, option, size or element type). Nothing changes then.
  virtual void load(const state_reader& r, const std::string& prefix) = 0;
};

/// Names accepted by make_optimizer.
const std::vector<std::string>& optimizer_names();

/// Creates an optimizer for `n` parameters (PyTorch semantics: momentum and
/// nesterov as torch.optim.SGD, adagrad without lr decay, adam with bias
/// correction; weight decay adds weight_decay * p to the gradient) and
/// NovoGrad (Ginsburg et al. 2019; per layer l: v = ||g_l||^2 at the first
/// step, then beta2 v + (1 - beta2) ||g_l||^2; m = beta1 m + g_l / (sqrt(v) +
/// eps) + weight_decay * p; p -= lr * m) and the delayed Nesterov update
/// of asynchronous local SGD (Liu et al. 2024, "Asynchronous Local-SGD
/// Training for Language Modeling"; N = delay, c = activation, beta =
/// momentum; at step t, from 0: s += g; if (t + 1) % N == 0, m = beta m +
/// s / N, p -= lr ((1 - c N + c) beta m + g / N) and s = 0; otherwise p -=
/// lr (c beta m + g / N); N = 1 with c = 0 is nesterov). Throws
/// std::invalid_argument naming the unknown optimizer and listing the known
/// ones, or naming an option out of range (momentum, beta1 or beta2 outside
/// [0, 1), negative weight_decay or eps, layers that do not add up to n, a
/// delay of 0, an activation outside [0, 1]).
template <class T>
std::unique_ptr<optimizer<T>> make_optimizer(const optimizer_options& opts,
                                             std::size_t n);

/// Throws as make_optimizer does for an unknown name or an option out of
/// range, whatever the parameters' count (the layers are not checked).
void check_optimizer(const optimizer_options& opts);

} // namespace troupe::optim
