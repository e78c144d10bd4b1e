#include "optim/low_rank.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

#include <Eigen/Core>

#include "optim/rng.hpp"

namespace troupe::optim {

powersgd_layout make_powersgd_layout(const std::vector<named_range>& layers,
                                     std::size_t n, std::size_t rank) {
  if (rank == 0)
    throw std::invalid_argument("PowerSGD: the rank must be at least 1");
  powersgd_layout out;
  out.rank = rank;
  std::map<std::string, std::size_t> bias_size;
  for (const auto& r : layers) {
    auto dot = r.name.rfind(".bias");
    if (dot != std::string::npos && dot + 5 == r.name.size())
      bias_size[r.name.substr(0, dot)] = r.size;
  }
  std::size_t covered = 0;
  auto dense_to = [&](std::size_t end) {
    if (end > covered)
      out.dense.push_back({covered, end - covered});
    covered = std::max(covered, end);
  };
  for (const auto& r : layers) {
    if (r.offset < covered || r.offset + r.size > n)
      continue; // overlapping or outside: left to the dense parts
    auto dot = r.name.rfind(".weight");
    std::size_t rows = 0;
    if (dot != std::string::npos && dot + 7 == r.name.size())
      if (auto it = bias_size.find(r.name.substr(0, dot));
          it != bias_size.end())
        rows = it->second;
    if (rows == 0 || r.size % rows != 0)
      continue;
    auto cols = r.size / rows;
    if (rank * (rows + cols) >= rows * cols)
      continue; // no smaller as factors
    dense_to(r.offset);
    out.matrices.push_back({r.offset, rows, cols});
    covered = r.offset + r.size;
  }
  dense_to(n);
  for (const auto& m : out.matrices) {
    out.p_length += m.rows * rank;
    out.q_length += m.cols * rank;
  }
  for (const auto& d : out.dense)
    out.p_length += d.size;
  return out;
}

namespace {

using rows_f
    = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using const_map = Eigen::Map<const rows_f, Eigen::Unaligned>;
using map = Eigen::Map<rows_f, Eigen::Unaligned>;

auto in(const float* p, std::size_t rows, std::size_t cols) {
  return const_map{p, static_cast<Eigen::Index>(rows),
                   static_cast<Eigen::Index>(cols)};
}

auto out(float* p, std::size_t rows, std::size_t cols) {
  return map{p, static_cast<Eigen::Index>(rows),
             static_cast<Eigen::Index>(cols)};
}

} // namespace

void low_rank_project(const float* m, std::size_t rows, std::size_t cols,
                      const float* q, std::size_t rank, float* p) noexcept {
  out(p, rows, rank).noalias() = in(m, rows, cols) * in(q, cols, rank);
}

void low_rank_back(const float* m, std::size_t rows, std::size_t cols,
                   const float* p, std::size_t rank, float* q) noexcept {
  out(q, cols, rank).noalias()
      = in(m, rows, cols).transpose() * in(p, rows, rank);
}

void low_rank_expand(const float* p, const float* q, std::size_t rows,
                     std::size_t cols, std::size_t rank, float* o) noexcept {
  out(o, rows, cols).noalias()
      = in(p, rows, rank) * in(q, cols, rank).transpose();
}

void orthonormalize(float* p, std::size_t rows, std::size_t rank) noexcept {
  std::vector<double> col(rows);
  for (std::size_t c = 0; c < rank; ++c) {
    double before = 0;
    for (std::size_t i = 0; i < rows; ++i) {
      col[i] = p[i * rank + c];
      before += col[i] * col[i];
    }
    for (std::size_t b = 0; b < c; ++b) {
      double dot = 0;
      for (std::size_t i = 0; i < rows; ++i)
        dot += col[i] * p[i * rank + b];
      for (std::size_t i = 0; i < rows; ++i)
        col[i] -= dot * p[i * rank + b];
    }
    double norm = 0;
    for (auto v : col)
      norm += v * v;
    norm = std::sqrt(norm);
    bool keep = norm > 1e-6 * std::sqrt(before) && norm > 1e-30;
    for (std::size_t i = 0; i < rows; ++i)
      p[i * rank + c] = keep ? static_cast<float>(col[i] / norm) : 0.0f;
  }
}

std::vector<float> powersgd_start(const powersgd_layout& layout,
                                  std::uint64_t seed) {
  std::vector<float> q(layout.q_length);
  rng gen{seed * 0x9E3779B97F4A7C15ull + 0x505745ull};
  for (auto& v : q)
    v = static_cast<float>(gen.normal());
  return q;
}

std::vector<std::uint32_t> top_k_indices(const float* v, std::size_t n,
                                         std::size_t k) {
  k = std::min(k, n);
  std::vector<std::uint32_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0u);
  auto larger = [v](std::uint32_t a, std::uint32_t b) {
    auto x = std::abs(v[a]), y = std::abs(v[b]);
    return x != y ? x > y : a < b;
  };
  if (k < n)
    std::nth_element(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k),
                     idx.end(), larger);
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

std::uint32_t cyclic_leader(std::uint64_t step,
                            std::uint32_t workers) noexcept {
  return workers == 0 ? 0 : static_cast<std::uint32_t>(step % workers);
}

void scalecom_memory(float* e, const float* m, std::size_t n,
                     const std::vector<std::uint32_t>& sent,
                     float beta) noexcept {
  if (beta == 1.0f) { // plain error feedback: no 0 x e to round
    std::copy(m, m + n, e);
    for (auto i : sent)
      e[i] = 0.0f;
    return;
  }
  auto keep = 1.0f - beta;
  std::size_t j = 0;
  for (std::size_t i = 0; i < n; ++i) {
    bool was_sent = j < sent.size() && sent[j] == i;
    j += was_sent ? 1 : 0;
    e[i] = keep * e[i] + (was_sent ? 0.0f : beta * m[i]);
  }
}

void encode_indices(const std::vector<std::uint32_t>& idx,
                    float* out) noexcept {
  for (std::size_t i = 0; i < idx.size(); ++i) {
    out[2 * i] = static_cast<float>(idx[i] >> 16);
    out[2 * i + 1] = static_cast<float>(idx[i] & 0xFFFFu);
  }
}

std::string decode_indices(const float* in, std::size_t k, std::size_t n,
                           std::vector<std::uint32_t>& out) {
  out.clear();
  if (std::all_of(in, in + 2 * k, [](float v) { return v == 0.0f; }))
    return {};
  for (std::size_t i = 0; i < k; ++i) {
    float hi = in[2 * i], lo = in[2 * i + 1];
    auto half = [](float v) {
      return std::isfinite(v) && v >= 0 && v <= 65535 && v == std::floor(v);
    };
    if (!half(hi) || !half(lo)) {
      out.clear();
      return "index " + std::to_string(i) + " is not two 16-bit integers";
    }
    auto x = (static_cast<std::uint32_t>(hi) << 16)
             | static_cast<std::uint32_t>(lo);
    if (x >= n || (!out.empty() && x <= out.back())) {
      out.clear();
      return "index " + std::to_string(i) + " (" + std::to_string(x)
             + ") is out of range or out of order";
    }
    out.push_back(x);
  }
  return {};
}

} // namespace troupe::optim
