#pragma once

#include <cstdint>

#include "optim/types.hpp"

namespace troupe::optim {

/// Softmax cross-entropy on logits (`classes x batch`) against integer labels.
/// Returns the mean loss over the batch and, if `dlogits` is not null, writes
/// d(mean loss)/d(logits) into it. Numerically stable (max-shifted).
template <class T>
T softmax_cross_entropy(const matrix<T>& logits, const std::int32_t* labels,
                        matrix<T>* dlogits);

/// Number of columns whose arg-max equals the label.
template <class T>
std::size_t count_correct(const matrix<T>& logits,
                          const std::int32_t* labels);

} // namespace troupe::optim
