#pragma once

#include <cstddef>
#include <cstdint>

#include "optim/types.hpp"

namespace troupe::optim {

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
