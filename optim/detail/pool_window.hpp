// The k x k windows (kernel = stride = k) both pooling layers share.

#pragma once

#include <stdexcept>
#include <string>

#include "optim/types.hpp"

namespace troupe::optim::detail {

/// `k`, or std::invalid_argument naming `layer` unless k >= 1.
inline int pool_kernel(int k, const char* layer) {
  if (k < 1)
    throw std::invalid_argument(std::string{layer}
                                + ": kernel must be at least 1, got "
                                + std::to_string(k));
  return k;
}

/// The output of non-overlapping k x k windows over `in` (rows and columns
/// that do not fill a window dropped); std::invalid_argument if `in` is
/// smaller than one window.
inline shape pool_output(const shape& in, int k) {
  if (in.c <= 0 || in.h < k || in.w < k)
    throw std::invalid_argument(
        "input {" + std::to_string(in.c) + ", " + std::to_string(in.h) + ", "
        + std::to_string(in.w) + "} is smaller than the " + std::to_string(k)
        + "x" + std::to_string(k) + " window");
  return shape{in.c, in.h / k, in.w / k};
}

} // namespace troupe::optim::detail
