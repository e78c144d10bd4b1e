#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>

namespace troupe::optim {

/// Column-major dynamic matrix. Activations are `features x batch`: one column
/// per sample, so a sample is contiguous.
template <class T>
using matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;

/// Dynamic column vector.
template <class T>
using vector = Eigen::Matrix<T, Eigen::Dynamic, 1>;

/// Mutable view of a contiguous block as a matrix.
template <class T>
using matrix_map = Eigen::Map<matrix<T>, Eigen::Unaligned>;

/// Read-only view of a contiguous block as a matrix.
template <class T>
using const_matrix_map = Eigen::Map<const matrix<T>, Eigen::Unaligned>;

/// Mutable view of a contiguous block as a vector.
template <class T>
using vector_map = Eigen::Map<vector<T>, Eigen::Unaligned>;

/// Read-only view of a contiguous block as a vector.
template <class T>
using const_vector_map = Eigen::Map<const vector<T>, Eigen::Unaligned>;

/// Storage of a flat buffer (64-byte aligned for AVX-512 loads).
template <class T>
using flat_storage = std::vector<T, Eigen::aligned_allocator<T>>;

/// Shape of one sample as channels x height x width; a feature vector is
/// `{n, 1, 1}`.
struct shape {
  int c = 1;
  int h = 1;
  int w = 1;

  /// Number of scalars in one sample.
  std::size_t size() const noexcept {
    return static_cast<std::size_t>(c) * h * w;
  }

  friend bool operator==(const shape& x, const shape& y) noexcept {
    return x.c == y.c && x.h == y.h && x.w == y.w;
  }
};

/// "[c, h, w]", for messages.
inline std::string to_string(const shape& s) {
  return "[" + std::to_string(s.c) + ", " + std::to_string(s.h) + ", "
         + std::to_string(s.w) + "]";
}

} // namespace troupe::optim
