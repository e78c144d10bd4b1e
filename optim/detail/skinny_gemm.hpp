#pragma once

#include <Eigen/Core>

namespace troupe::optim::detail {

// Products with one very tall operand and few columns, as in a convolution
// lowered to im2col: Eigen's general GEMM spends most of its time packing
// the tall operand there; these kernels stream it once, keeping a block of
// accumulators in registers. All matrices are column-major and contiguous.

/// Largest column count of `b` that `tall_times_small` handles.
inline constexpr int max_small_cols = 16;

/// Largest column count of `d` that `tall_transpose_times_tall` handles.
inline constexpr int max_tall_cols = 12;

/// `y += a * b` with `a` n x k, `b` k x c and `y` n x c, for
/// 1 <= c <= max_small_cols (the caller falls back to Eigen beyond).
template <class T>
void tall_times_small(const T* a, Eigen::Index n, Eigen::Index k, const T* b,
                      int c, T* y);

/// `g = a^T * d` with `a` n x k, `d` n x c and `g` k x c (overwritten), for
/// 1 <= c <= max_tall_cols (the caller falls back to Eigen beyond).
template <class T>
void tall_transpose_times_tall(const T* a, Eigen::Index n, Eigen::Index k,
                               const T* d, int c, T* g);

/// Largest column count of `a` that `tall_times_transpose` handles.
inline constexpr int max_inner_cols = 16;

/// `y = a * b^T` with `a` n x c, `b` k x c and `y` n x k (overwritten), for
/// 1 <= c <= max_inner_cols (the caller falls back to Eigen beyond).
template <class T>
void tall_times_transpose(const T* a, Eigen::Index n, int c, const T* b,
                          Eigen::Index k, T* y);

} // namespace troupe::optim::detail
