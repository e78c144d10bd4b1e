// The summable compressors' pieces without actors (docs/algorithms.md
// "PowerSGD and ScaleCom"): PowerSGD's layout of a model, its products by
// hand, their linearity (the workers' P and Q sum to the P and Q of the
// summed gradient), orthonormalization, and its power iteration recovering
// a low-rank matrix exactly; ScaleCom's top-k, cyclic leader, the index
// encoding a sum with zeros carries unchanged, and the low-pass filter on
// its memory.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <vector>

#include <catch2/catch.hpp>

#include "optim/low_rank.hpp"
#include "optim/rng.hpp"

using namespace troupe::optim;

namespace {

std::vector<float> gaussian(std::size_t n, std::uint64_t seed) {
  rng gen{seed};
  std::vector<float> v(n);
  for (auto& x : v)
    x = static_cast<float>(gen.normal());
  return v;
}

/// The ranges of an mlp 784-256-128-10 as the models declare them.
std::vector<named_range> mlp_ranges() {
  std::vector<named_range> out;
  std::size_t off = 0;
  std::size_t sizes[][2] = {{784, 256}, {256, 128}, {128, 10}};
  int i = 0;
  for (auto& s : sizes) {
    auto name = "dense" + std::to_string(++i);
    out.push_back({name + ".weight", off, s[0] * s[1], range_kind::weight});
    off += s[0] * s[1];
    out.push_back({name + ".bias", off, s[1], range_kind::bias});
    off += s[1];
  }
  return out;
}

} // namespace

TEST_CASE("PowerSGD's layout: the weight matrices with their bias's rows, "
          "the rest dense, tiling the model once") {
  auto ranges = mlp_ranges();
  std::size_t n = ranges.back().offset + ranges.back().size;
  auto l = make_powersgd_layout(ranges, n, 4);
  // 128 x 10 at rank 4: 4 (128 + 10) = 552 < 1280, so all three compress.
  REQUIRE(l.matrices.size() == 3);
  CHECK(l.matrices[0].rows == 256);
  CHECK(l.matrices[0].cols == 784);
  CHECK(l.matrices[2].rows == 10);
  std::vector<int> covered(n, 0);
  for (auto& m : l.matrices)
    for (std::size_t i = 0; i < m.rows * m.cols; ++i)
      ++covered[m.offset + i];
  for (auto& d : l.dense)
    for (std::size_t i = 0; i < d.size; ++i)
      ++covered[d.offset + i];
  CHECK(std::count(covered.begin(), covered.end(), 1)
        == static_cast<std::ptrdiff_t>(n));
  CHECK(l.p_length == 4 * (256 + 128 + 10) + (256 + 128 + 10));
  CHECK(l.q_length == 4 * (784 + 256 + 128));
  // At rank 10 the last layer is cheaper dense: 10 (128 + 10) > 1280.
  auto wide = make_powersgd_layout(ranges, n, 10);
  CHECK(wide.matrices.size() == 2);
  CHECK_THROWS_WITH(make_powersgd_layout(ranges, n, 0),
                    Catch::Contains("rank"));
  CHECK(make_powersgd_layout({}, 100, 2).dense.size() == 1);
}

TEST_CASE("PowerSGD's products by hand, and their sums over workers") {
  // m = [[1, 2, 3], [4, 5, 6]], q = [1, 0, -1]^T (rank 1).
  const float m[] = {1, 2, 3, 4, 5, 6}, q[] = {1, 0, -1};
  float p[2];
  low_rank_project(m, 2, 3, q, 1, p);
  CHECK(p[0] == -2);
  CHECK(p[1] == -2);
  float back[3];
  low_rank_back(m, 2, 3, p, 1, back);
  CHECK(back[0] == -10);
  CHECK(back[1] == -14);
  CHECK(back[2] == -18);
  float out[6];
  low_rank_expand(p, q, 2, 3, 1, out);
  CHECK(out[0] == -2);
  CHECK(out[2] == 2);
  // Linear: the workers' P's sum to the P of their summed matrices.
  const std::size_t rows = 30, cols = 20, r = 3;
  auto qs = gaussian(cols * r, 5);
  std::vector<float> sum_m(rows * cols, 0.0f), sum_p(rows * r, 0.0f);
  for (std::uint64_t w = 0; w < 4; ++w) {
    auto mw = gaussian(rows * cols, 10 + w);
    std::vector<float> pw(rows * r);
    low_rank_project(mw.data(), rows, cols, qs.data(), r, pw.data());
    for (std::size_t i = 0; i < mw.size(); ++i)
      sum_m[i] += mw[i];
    for (std::size_t i = 0; i < pw.size(); ++i)
      sum_p[i] += pw[i];
  }
  std::vector<float> direct(rows * r);
  low_rank_project(sum_m.data(), rows, cols, qs.data(), r, direct.data());
  for (std::size_t i = 0; i < direct.size(); ++i)
    CHECK(sum_p[i] == Approx(direct[i]).margin(1e-4));
}

TEST_CASE("orthonormalize: orthonormal columns; a dependent one becomes 0") {
  const std::size_t rows = 6, r = 3;
  auto p = gaussian(rows * r, 3);
  for (std::size_t i = 0; i < rows; ++i) // column 2 = 2 * column 0
    p[i * r + 2] = 2 * p[i * r];
  orthonormalize(p.data(), rows, r);
  auto dot = [&](std::size_t a, std::size_t b) {
    double s = 0;
    for (std::size_t i = 0; i < rows; ++i)
      s += double{p[i * r + a]} * p[i * r + b];
    return s;
  };
  CHECK(dot(0, 0) == Approx(1).epsilon(1e-6));
  CHECK(dot(1, 1) == Approx(1).epsilon(1e-6));
  CHECK(std::abs(dot(0, 1)) < 1e-6);
  CHECK(dot(2, 2) == 0);
}

TEST_CASE("PowerSGD's warm-started power iteration recovers a rank-2 "
          "matrix") {
  const std::size_t rows = 40, cols = 25, r = 2;
  auto u = gaussian(rows * r, 1), v = gaussian(cols * r, 2);
  std::vector<float> m(rows * cols);
  low_rank_expand(u.data(), v.data(), rows, cols, r, m.data());
  auto q = gaussian(cols * r, 3);
  std::vector<float> p(rows * r), approx(rows * cols);
  double err = 0, norm = 0;
  for (int it = 0; it < 3; ++it) { // a step each: P = M Q, orth, Q = M^T P
    low_rank_project(m.data(), rows, cols, q.data(), r, p.data());
    orthonormalize(p.data(), rows, r);
    low_rank_back(m.data(), rows, cols, p.data(), r, q.data());
    low_rank_expand(p.data(), q.data(), rows, cols, r, approx.data());
    err = norm = 0;
    for (std::size_t i = 0; i < m.size(); ++i) {
      err += (m[i] - approx[i]) * (m[i] - approx[i]);
      norm += m[i] * m[i];
    }
  }
  std::cout << "powersgd rank 2: relative error " << std::sqrt(err / norm)
            << " after 3 steps" << std::endl;
  CHECK(std::sqrt(err / norm) < 1e-5);
}

TEST_CASE("ScaleCom's pieces: top-k, the cyclic leader, indices through a "
          "sum with zeros") {
  const float v[] = {0.5f, -3, 2, -2, 0.1f};
  CHECK(top_k_indices(v, 5, 2) == std::vector<std::uint32_t>{1, 2});
  // A tie (|2| = |-2|) goes to the lower index.
  CHECK(top_k_indices(v, 5, 3) == std::vector<std::uint32_t>{1, 2, 3});
  CHECK(top_k_indices(v, 5, 9).size() == 5);
  CHECK(cyclic_leader(0, 4) == 0);
  CHECK(cyclic_leader(9, 4) == 1);
  std::vector<std::uint32_t> idx{3, 65535, 65536, 200000, 16777217};
  std::vector<float> enc(2 * idx.size());
  encode_indices(idx, enc.data());
  for (auto& x : enc) // the other workers' zeros added
    x = x + 0.0f + 0.0f;
  std::vector<std::uint32_t> back;
  CHECK(decode_indices(enc.data(), idx.size(), 20000000, back).empty());
  CHECK(back == idx);
  CHECK_FALSE(decode_indices(enc.data(), idx.size(), 100000, back).empty());
  CHECK(back.empty());
  enc[1] = 0.5f; // not an integer
  CHECK_THAT(decode_indices(enc.data(), idx.size(), 20000000, back),
             Catch::Contains("index 0"));
  std::vector<float> zeros(10, 0.0f);
  CHECK(decode_indices(zeros.data(), 5, 100, back).empty());
  CHECK(back.empty());
}

TEST_CASE("ScaleCom's low-pass filter on the memory, by hand; at beta = 1 "
          "plain error feedback bit for bit") {
  // e = (1 - beta) e + beta (m - C(m)), m = e + g, C(m) the sent entries.
  std::vector<float> e{4, -8, 2, 0};
  const std::vector<float> g{1, 2, -6, 3};
  std::vector<float> m(4);
  for (std::size_t i = 0; i < 4; ++i)
    m[i] = e[i] + g[i]; // 5, -6, -4, 3
  auto sent = top_k_indices(m.data(), 4, 2);
  REQUIRE(sent == std::vector<std::uint32_t>{0, 1});
  scalecom_memory(e.data(), m.data(), 4, sent, 0.25f);
  // Sent: 0.75 e; kept: 0.75 e + 0.25 m.
  CHECK(e == std::vector<float>{3, -6, 0.5f, 0.75f});
  // Nothing sent and no gradient (m = e): e stays.
  std::vector<float> same = e;
  scalecom_memory(e.data(), same.data(), 4, {}, 0.25f);
  CHECK(e == same);

  const std::uint64_t seed = 89;
  std::cout << "scalecom memory: seed " << seed << std::endl;
  const std::size_t n = 1000;
  auto e1 = gaussian(n, seed), grad = gaussian(n, seed + 1);
  std::vector<float> mem(n);
  for (std::size_t i = 0; i < n; ++i)
    mem[i] = e1[i] + grad[i];
  auto idx = top_k_indices(mem.data(), n, 37);
  std::vector<float> plain = mem; // error feedback: m less what was sent
  for (auto i : idx)
    plain[i] = 0.0f;
  auto filtered = e1;
  scalecom_memory(filtered.data(), mem.data(), n, idx, 1.0f);
  CHECK(std::memcmp(filtered.data(), plain.data(), n * sizeof(float)) == 0);
  // Below 1 the old memory stays in part, at the sent entries too.
  filtered = e1;
  scalecom_memory(filtered.data(), mem.data(), n, idx, 0.5f);
  for (std::size_t j = 0; j < idx.size(); j += 9)
    CHECK(filtered[idx[j]] == 0.5f * e1[idx[j]]);
  CHECK(std::memcmp(filtered.data(), plain.data(), n * sizeof(float)) != 0);
}
