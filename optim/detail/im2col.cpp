#include "optim/detail/im2col.hpp"

#include <cstring>

namespace troupe::optim::detail {

namespace {

/// Copies n scalars in blocks of V with an overlapping last block (n >= V).
/// Constant-size memcpy compiles to vector moves; rows are too short for
/// a library call per row.
template <int V, class T>
void copy_blocks(T* dst, const T* src, int n) {
  int i = 0;
  for (; i + V <= n; i += V)
    std::memcpy(dst + i, src + i, V * sizeof(T));
  if (i < n)
    std::memcpy(dst + n - V, src + n - V, V * sizeof(T));
}

/// dst[0, n) = src[0, n) for short rows of non-overlapping buffers.
template <class T>
void copy_row(T* dst, const T* src, int n) {
  constexpr int wide = 64 / sizeof(T); // one 512-bit register
  if (n >= wide)
    copy_blocks<wide>(dst, src, n);
  else if (n >= wide / 2)
    copy_blocks<wide / 2>(dst, src, n);
  else if (n >= wide / 4)
    copy_blocks<wide / 4>(dst, src, n);
  else
    for (int i = 0; i < n; ++i)
      dst[i] = src[i];
}

/// dst[0, n) += src[0, n) for short rows of non-overlapping buffers.
template <class T>
void add_row(T* __restrict dst, const T* __restrict src, int n) {
  for (int i = 0; i < n; ++i)
    dst[i] += src[i];
}

} // namespace

template <class T>
void pad_planes(const conv_geometry& g, const T* x, T* padded) {
  const int planes = g.channels * g.batch;
  const int hp = g.padded_h();
  const int wp = g.padded_w();
  for (int pl = 0; pl < planes; ++pl) {
    const T* src = x + static_cast<std::size_t>(pl) * g.h * g.w;
    T* dst = padded + static_cast<std::size_t>(pl) * hp * wp
             + static_cast<std::size_t>(g.padding) * wp + g.padding;
    for (int i = 0; i < g.h; ++i)
      copy_row(dst + static_cast<std::size_t>(i) * wp,
               src + static_cast<std::size_t>(i) * g.w, g.w);
  }
}

template <class T>
void crop_planes(const conv_geometry& g, const T* padded, T* x) {
  const int planes = g.channels * g.batch;
  const int hp = g.padded_h();
  const int wp = g.padded_w();
  for (int pl = 0; pl < planes; ++pl) {
    const T* src = padded + static_cast<std::size_t>(pl) * hp * wp
                   + static_cast<std::size_t>(g.padding) * wp + g.padding;
    T* dst = x + static_cast<std::size_t>(pl) * g.h * g.w;
    for (int i = 0; i < g.h; ++i)
      copy_row(dst + static_cast<std::size_t>(i) * g.w,
               src + static_cast<std::size_t>(i) * wp, g.w);
  }
}

template <class T>
void im2col(const conv_geometry& g, const T* padded, T* cols) {
  const int k = g.kernel;
  const int s = g.stride;
  const int ho = g.out_h();
  const int wo = g.out_w();
  const std::size_t plane
      = static_cast<std::size_t>(g.padded_h()) * g.padded_w();
  const std::size_t wp = static_cast<std::size_t>(g.padded_w());
  T* dst = cols;
  // Column of tap (ci, ki, kj): output (b, oh, ow) reads padded input
  // (ci, b, oh * s + ki, ow * s + kj).
  for (int ci = 0; ci < g.channels; ++ci)
    for (int ki = 0; ki < k; ++ki)
      for (int kj = 0; kj < k; ++kj)
        for (int b = 0; b < g.batch; ++b) {
          const T* src = padded
                         + (static_cast<std::size_t>(ci) * g.batch + b) * plane
                         + ki * wp + kj;
          if (s == 1) {
            for (int oh = 0; oh < ho; ++oh, dst += wo, src += wp)
              copy_row(dst, src, wo);
          } else {
            for (int oh = 0; oh < ho; ++oh, dst += wo, src += s * wp)
              for (int ow = 0; ow < wo; ++ow)
                dst[ow] = src[ow * s];
          }
        }
}

template <class T>
void col2im(const conv_geometry& g, const T* dcols, T* dpadded) {
  const int k = g.kernel;
  const int s = g.stride;
  const int ho = g.out_h();
  const int wo = g.out_w();
  const std::size_t plane
      = static_cast<std::size_t>(g.padded_h()) * g.padded_w();
  const std::size_t wp = static_cast<std::size_t>(g.padded_w());
  const T* src = dcols;
  for (int ci = 0; ci < g.channels; ++ci)
    for (int ki = 0; ki < k; ++ki)
      for (int kj = 0; kj < k; ++kj)
        for (int b = 0; b < g.batch; ++b) {
          T* dst = dpadded
                   + (static_cast<std::size_t>(ci) * g.batch + b) * plane
                   + ki * wp + kj;
          if (s == 1) {
            for (int oh = 0; oh < ho; ++oh, src += wo, dst += wp)
              add_row(dst, src, wo);
          } else {
            for (int oh = 0; oh < ho; ++oh, src += wo, dst += s * wp)
              for (int ow = 0; ow < wo; ++ow)
                dst[ow * s] += src[ow];
          }
        }
}

template void pad_planes<float>(const conv_geometry&, const float*, float*);
template void pad_planes<double>(const conv_geometry&, const double*, double*);
template void crop_planes<float>(const conv_geometry&, const float*, float*);
template void crop_planes<double>(const conv_geometry&, const double*, double*);
template void im2col<float>(const conv_geometry&, const float*, float*);
template void im2col<double>(const conv_geometry&, const double*, double*);
template void col2im<float>(const conv_geometry&, const float*, float*);
template void col2im<double>(const conv_geometry&, const double*, double*);

} // namespace troupe::optim::detail
