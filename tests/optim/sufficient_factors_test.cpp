// Sufficient factors (optim/sufficient_factors.hpp): a dense layer's weight
// gradient is its output gradient times its input, transposed; summed over
// workers' batches, the factors' products are the sum of their gradients;
// Poseidon's choice by the values each would send.

#include <algorithm>
#include <cmath>
#include <iostream>

#include <catch2/catch.hpp>

#include "optim/model_spec.hpp"
#include "optim/rng.hpp"
#include "optim/sufficient_factors.hpp"

using namespace troupe::optim;

namespace {

/// A batch of `b` random inputs of `d` features and labels of 3 classes.
void random_batch(std::uint64_t seed, int d, int b, matrix<float>& x,
                  std::vector<std::int32_t>& y) {
  rng r{seed};
  x.resize(d, b);
  y.resize(static_cast<std::size_t>(b));
  for (int j = 0; j < b; ++j) {
    for (int i = 0; i < d; ++i)
      x(i, j) = static_cast<float>(r.normal());
    y[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(r.next() % 3);
  }
}

double max_abs(const float* a, const float* b, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i)
    m = std::max(m, std::abs(double{a[i]} - double{b[i]}));
  return m;
}

double max_abs(const float* a, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i)
    m = std::max(m, std::abs(double{a[i]}));
  return m;
}

} // namespace

TEST_CASE("a dense layer's gradient is the product of its factors") {
  const std::uint64_t seed = 71;
  std::cout << "factors: seed " << seed << std::endl;
  auto m = build_model<float>("mlp", shape{20, 1, 1}, 3);
  m.init(seed);
  auto fc = fc_layers(m);
  REQUIRE(fc.size() == 3); // 20 -> 256 -> 128 -> 3, relus between
  CHECK(fc[0].layer == 0);
  CHECK(fc[0].out == 256);
  CHECK(fc[0].in == 20);
  CHECK(fc[1].in == 256);
  CHECK(fc[2].out == 3);
  matrix<float> x;
  std::vector<std::int32_t> y;
  random_batch(seed, 20, 16, x, y);
  m.loss_and_gradient(x, y.data());
  for (const auto& l : fc) {
    const auto& u = m.output_gradient(l.layer);
    const auto& v = m.layer_input(l.layer, x);
    REQUIRE(static_cast<std::size_t>(u.rows()) == l.out);
    REQUIRE(static_cast<std::size_t>(v.rows()) == l.in);
    REQUIRE(u.cols() == 16);
    std::vector<float> dw(l.out * l.in, 0.0f);
    add_factor_product(u.data(), v.data(), l.out, l.in, 16, dw.data());
    const float* g = m.grads() + l.offset;
    auto err = max_abs(dw.data(), g, dw.size());
    INFO("layer " << l.name << ": max |U V^T - dW| " << err << " of "
                  << max_abs(g, dw.size()));
    CHECK(err <= 1e-6 * max_abs(g, dw.size()));
    CHECK(max_abs(g, dw.size()) > 0);
  }
}

TEST_CASE("the factors of several batches add up to their gradients' sum") {
  const std::uint64_t seed = 73;
  std::cout << "factors of 3 batches: seed " << seed << std::endl;
  auto m = build_model<float>("mlp", shape{12, 1, 1}, 3);
  m.init(seed);
  auto fc = fc_layers(m);
  std::vector<float> dense(m.size(), 0.0f);
  std::vector<std::vector<float>> from_factors(fc.size());
  for (std::size_t k = 0; k < fc.size(); ++k)
    from_factors[k].assign(fc[k].out * fc[k].in, 0.0f);
  for (std::uint64_t w = 0; w < 3; ++w) {
    matrix<float> x;
    std::vector<std::int32_t> y;
    random_batch(seed + w, 12, 5 + static_cast<int>(w), x, y); // 5, 6, 7
    m.loss_and_gradient(x, y.data());
    for (std::size_t i = 0; i < m.size(); ++i)
      dense[i] += m.grads()[i];
    for (std::size_t k = 0; k < fc.size(); ++k) {
      const auto& u = m.output_gradient(fc[k].layer);
      add_factor_product(
          u.data(), m.layer_input(fc[k].layer, x).data(), fc[k].out, fc[k].in,
          static_cast<std::size_t>(u.cols()), from_factors[k].data());
    }
  }
  for (std::size_t k = 0; k < fc.size(); ++k) {
    const float* g = dense.data() + fc[k].offset;
    auto n = from_factors[k].size();
    CHECK(max_abs(from_factors[k].data(), g, n) <= 1e-6 * max_abs(g, n));
  }
}

TEST_CASE("Poseidon's choice: the factors where they are fewer values") {
  fc_layer wide{"fc", 0, 0, 4096, 4096};
  fc_layer narrow{"out", 1, 0, 10, 128};
  // 4 workers x 32 samples x 8192 = 1,048,576 < 16,777,216.
  CHECK(prefer_factors(wide, 32, 4));
  // 10 x 128 = 1,280 < 4 x 32 x 138.
  CHECK_FALSE(prefer_factors(narrow, 32, 4));
  // The boundary: W b (out + in) == out in is the matrix.
  fc_layer square{"sq", 0, 0, 64, 64};
  CHECK_FALSE(prefer_factors(square, 16, 2)); // 2 x 16 x 128 = 4096 = 64^2
  CHECK(prefer_factors(square, 15, 2));
}
