#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "optim/dataset.hpp"
#include "optim/sequential.hpp"

// The full-batch objective Sandblaster L-BFGS minimizes over a data set
// (algorithms.md §2): the mean softmax cross-entropy of a model over the
// first n training examples plus (l2 / 2) ||x||^2, evaluated in double and
// cut into portions of consecutive examples. A worker evaluates one portion
// at a time and sends the sums (not the means), so the coordinator's total
// divided by n is the objective whatever the split. No CAF.

namespace troupe::optim {

struct batch_objective_options {
  std::string model = "logreg"; ///< make_model's name
  std::size_t examples = 0;     ///< the first n examples (0: all)
  std::size_t portions = 64;
  double l2 = 0;           ///< L2 penalty on every parameter
  std::size_t chunk = 256; ///< examples per forward/backward pass
};

/// Whether `model` (a name or description) suits a full-batch objective:
/// cross-entropy, and a forward pass that is a function of the parameters
/// alone (no dropout, no batch_norm, nor in a TorchScript module:
/// torchscript_deterministic). Throws as model_description does.
bool deterministic_model(const std::string& model);

/// One evaluator (its own double model and buffers; not thread-safe: one per
/// worker). Throws std::invalid_argument for an unknown model, zero
/// portions or more portions than examples.
class batch_objective {
public:
  batch_objective(std::shared_ptr<const dataset> data,
                  batch_objective_options opts);

  /// Sum over portion p's examples of the loss at x (n = size() values),
  /// the penalty included per example; writes the gradient sum to `grad` and
  /// the number of examples to `samples`. Throws std::domain_error if the
  /// loss is not finite, std::invalid_argument for a wrong n or p.
  double portion(const double* x, std::size_t n, std::size_t p, double* grad,
                 std::uint64_t& samples);

  /// The objective and its gradient over every portion (the serial
  /// reference), summed in portion order.
  double full(const std::vector<double>& x, std::vector<double>& grad);

  /// Number of parameters.
  std::size_t size() const noexcept {
    return model_.size();
  }
  std::size_t portions() const noexcept {
    return opts_.portions;
  }
  std::size_t examples() const noexcept {
    return opts_.examples;
  }
  /// Examples [first, last) of portion p.
  std::pair<std::size_t, std::size_t> bounds(std::size_t p) const noexcept {
    return {p * opts_.examples / opts_.portions,
            (p + 1) * opts_.examples / opts_.portions};
  }

private:
  std::shared_ptr<const dataset> data_;
  batch_objective_options opts_;
  sequential<double> model_;
  matrix<double> x_;
};

} // namespace troupe::optim
