#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "optim/types.hpp"

namespace troupe::optim {

/// The loss a model trains with (a model description's "loss").
enum class loss_kind {
  cross_entropy,        ///< softmax cross-entropy on one logit per class
  binary_cross_entropy, ///< sigmoid cross-entropy on one logit, labels 0/1
  mse,                  ///< mean squared error on one output, float targets
};

/// "cross_entropy", "binary_cross_entropy", "mse".
const char* to_string(loss_kind k) noexcept;

/// The names of every loss_kind, in declaration order.
const std::vector<std::string>& loss_names();

/// The loss named `name`; throws std::invalid_argument listing the names.
loss_kind parse_loss(const std::string& name);

/// Outputs per sample a model with this loss has on data of `classes`
/// classes: `classes` for cross-entropy, 1 otherwise.
int loss_outputs(loss_kind k, int classes) noexcept;

/// What a batch is compared against: class labels (cross-entropy, binary
/// cross-entropy) or float targets (mse), one per sample.
struct batch_targets {
  const std::int32_t* labels = nullptr;
  const float* values = nullptr;
};

/// The mean loss of `out` (outputs x batch) under `k` and, if `dout` is not
/// null, d(mean loss)/d(out) in it (resized). Throws std::invalid_argument
/// if the targets the loss needs are missing, out has the wrong number of
/// rows, or a label is out of range.
template <class T>
T batch_loss(loss_kind k, const matrix<T>& out, batch_targets t,
             matrix<T>* dout);

/// Binary cross-entropy with logits (PyTorch's BCEWithLogitsLoss): for one
/// logit z per sample and a label y in {0, 1}, the mean of
/// max(z, 0) - z y + log(1 + exp(-|z|)), stable for any z. The gradient is
/// (sigmoid(z) - y) / batch.
template <class T>
T binary_cross_entropy(const matrix<T>& logits, const std::int32_t* labels,
                       matrix<T>* dlogits);

/// Mean squared error of one output per sample against `targets`: the mean
/// of (y - t)^2 (PyTorch's MSELoss); the gradient is 2 (y - t) / batch.
template <class T>
T mean_squared_error(const matrix<T>& out, const float* targets,
                     matrix<T>* dout);

/// Number of samples a prediction gets right: the arg-max class for
/// cross-entropy, the sign of the logit for binary cross-entropy; 0 for mse.
template <class T>
std::size_t count_correct(loss_kind k, const matrix<T>& out,
                          const std::int32_t* labels);

/// Softmax cross-entropy on logits (`classes x batch`) against integer labels.
/// Returns the mean loss over the batch and, if `dlogits` is not null, writes
/// d(mean loss)/d(logits) = (softmax - onehot) / batch into it (resized to
/// the logits' shape). Numerically stable (max-shifted). Throws
/// std::invalid_argument for empty logits or a label outside [0, classes).
template <class T>
T softmax_cross_entropy(const matrix<T>& logits, const std::int32_t* labels,
                        matrix<T>* dlogits);

/// Number of columns whose arg-max (the first one on ties) equals the label.
template <class T>
std::size_t count_correct(const matrix<T>& logits, const std::int32_t* labels);

} // namespace troupe::optim
