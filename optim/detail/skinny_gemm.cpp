#include "optim/detail/skinny_gemm.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace troupe::optim::detail {

namespace {

using Eigen::Index;

/// Lanes of one 512-bit register.
template <class T>
constexpr int lanes = 64 / static_cast<int>(sizeof(T));

template <class T>
using packet = Eigen::Array<T, lanes<T>, 1>;

/// Accumulator blocks use about 24 of the 32 vector registers.
constexpr int blocks_for(int c) {
  return std::max(1, std::min(4, 24 / c));
}

template <class T, int C>
void tall_times_small_kernel(const T* a, Index n, Index k, const T* b, T* y) {
  using V = packet<T>;
  constexpr int P = lanes<T>;
  constexpr int R = blocks_for(C); // row packets per step
  Index r = 0;
  for (; r + R * P <= n; r += R * P) {
    V acc[R][C];
    for (int q = 0; q < R; ++q)
      for (int j = 0; j < C; ++j)
        acc[q][j] = Eigen::Map<const V>(y + j * n + r + q * P);
    for (Index t = 0; t < k; ++t) {
      const T* col = a + t * n + r;
      for (int q = 0; q < R; ++q) {
        const V x = Eigen::Map<const V>(col + q * P);
        for (int j = 0; j < C; ++j)
          acc[q][j] += x * b[t + j * k];
      }
    }
    for (int q = 0; q < R; ++q)
      for (int j = 0; j < C; ++j)
        Eigen::Map<V>(y + j * n + r + q * P) = acc[q][j];
  }
  for (; r < n; ++r)
    for (int j = 0; j < C; ++j) {
      T sum = y[j * n + r];
      for (Index t = 0; t < k; ++t)
        sum += a[t * n + r] * b[t + j * k];
      y[j * n + r] = sum;
    }
}

/// Adds a(r0:r1, t0:t0+TQ)^T * d(r0:r1, :) into g; r1 - r0 is a multiple of
/// the packet size.
template <class T, int C, int TQ>
void accumulate_taps(const T* a, Index n, Index k, const T* d, Index r0,
                     Index r1, Index t0, T* g) {
  using V = packet<T>;
  constexpr int P = lanes<T>;
  V acc[TQ][C];
  for (int q = 0; q < TQ; ++q)
    for (int j = 0; j < C; ++j)
      acc[q][j].setZero();
  for (Index r = r0; r < r1; r += P) {
    V dv[C];
    for (int j = 0; j < C; ++j)
      dv[j] = Eigen::Map<const V>(d + j * n + r);
    for (int q = 0; q < TQ; ++q) {
      const V x = Eigen::Map<const V>(a + (t0 + q) * n + r);
      for (int j = 0; j < C; ++j)
        acc[q][j] += x * dv[j];
    }
  }
  for (int q = 0; q < TQ; ++q)
    for (int j = 0; j < C; ++j)
      g[t0 + q + j * k] += acc[q][j].sum();
}

template <class T, int C>
void tall_transpose_times_tall_kernel(const T* a, Index n, Index k, const T* d,
                                      T* g) {
  constexpr int P = lanes<T>;
  constexpr int TQ = blocks_for(C); // taps per sweep
  std::fill(g, g + k * C, T{0});
  // Row blocks of `a` of about 256 KiB stay in L2 across the tap sweeps.
  const Index block = std::max<Index>(
      P, (Index{256 * 1024} / (k * Index{sizeof(T)})) / P * P);
  const Index full = n / P * P;
  for (Index r0 = 0; r0 < full; r0 += block) {
    const Index r1 = std::min(full, r0 + block);
    Index t0 = 0;
    for (; t0 + TQ <= k; t0 += TQ)
      accumulate_taps<T, C, TQ>(a, n, k, d, r0, r1, t0, g);
    for (; t0 < k; ++t0)
      accumulate_taps<T, C, 1>(a, n, k, d, r0, r1, t0, g);
  }
  for (Index r = full; r < n; ++r)
    for (Index t = 0; t < k; ++t)
      for (int j = 0; j < C; ++j)
        g[t + j * k] += a[t * n + r] * d[j * n + r];
}

template <class T, int C>
void tall_times_transpose_kernel(const T* a, Index n, const T* b, Index k,
                                 T* y) {
  using V = packet<T>;
  constexpr int P = lanes<T>;
  constexpr int R = 2; // row packets per step
  constexpr int O = 5; // output columns per step
  Index r = 0;
  for (; r + R * P <= n; r += R * P) {
    V av[R][C];
    for (int q = 0; q < R; ++q)
      for (int j = 0; j < C; ++j)
        av[q][j] = Eigen::Map<const V>(a + j * n + r + q * P);
    Index t = 0;
    for (; t + O <= k; t += O) {
      V acc[R][O];
      for (int q = 0; q < R; ++q)
        for (int o = 0; o < O; ++o)
          acc[q][o] = av[q][0] * b[t + o];
      for (int j = 1; j < C; ++j)
        for (int o = 0; o < O; ++o) {
          const T w = b[t + o + j * k];
          for (int q = 0; q < R; ++q)
            acc[q][o] += av[q][j] * w;
        }
      for (int q = 0; q < R; ++q)
        for (int o = 0; o < O; ++o)
          Eigen::Map<V>(y + (t + o) * n + r + q * P) = acc[q][o];
    }
    for (; t < k; ++t)
      for (int q = 0; q < R; ++q) {
        V acc = av[q][0] * b[t];
        for (int j = 1; j < C; ++j)
          acc += av[q][j] * b[t + j * k];
        Eigen::Map<V>(y + t * n + r + q * P) = acc;
      }
  }
  for (; r < n; ++r)
    for (Index t = 0; t < k; ++t) {
      T sum = 0;
      for (int j = 0; j < C; ++j)
        sum += a[j * n + r] * b[t + j * k];
      y[t * n + r] = sum;
    }
}

/// Calls f(std::integral_constant<int, C>) for the runtime c in [1, Max].
template <class F, int... Cs>
void dispatch(int c, F&& f, std::integer_sequence<int, Cs...>) {
  const bool found
      = ((c == Cs + 1 ? (f(std::integral_constant<int, Cs + 1>{}), true)
                      : false)
         || ...);
  if (!found)
    throw std::invalid_argument("skinny_gemm: unsupported column count");
}

} // namespace

template <class T>
void tall_times_small(const T* a, Index n, Index k, const T* b, int c, T* y) {
  dispatch(
      c,
      [&](auto cc) {
        tall_times_small_kernel<T, decltype(cc)::value>(a, n, k, b, y);
      },
      std::make_integer_sequence<int, max_small_cols>{});
}

template <class T>
void tall_transpose_times_tall(const T* a, Index n, Index k, const T* d, int c,
                               T* g) {
  dispatch(
      c,
      [&](auto cc) {
        tall_transpose_times_tall_kernel<T, decltype(cc)::value>(a, n, k, d, g);
      },
      std::make_integer_sequence<int, max_tall_cols>{});
}

template <class T>
void tall_times_transpose(const T* a, Index n, int c, const T* b, Index k,
                          T* y) {
  dispatch(
      c,
      [&](auto cc) {
        tall_times_transpose_kernel<T, decltype(cc)::value>(a, n, b, k, y);
      },
      std::make_integer_sequence<int, max_inner_cols>{});
}

template void tall_times_small<float>(const float*, Index, Index, const float*,
                                      int, float*);
template void tall_times_small<double>(const double*, Index, Index,
                                       const double*, int, double*);
template void tall_transpose_times_tall<float>(const float*, Index, Index,
                                               const float*, int, float*);
template void tall_transpose_times_tall<double>(const double*, Index, Index,
                                                const double*, int, double*);
template void tall_times_transpose<float>(const float*, Index, int,
                                          const float*, Index, float*);
template void tall_times_transpose<double>(const double*, Index, int,
                                           const double*, Index, double*);

} // namespace troupe::optim::detail
