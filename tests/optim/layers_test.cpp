#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "grad_check.hpp"
#include "optim/activation.hpp"
#include "optim/avg_pool2d.hpp"
#include "optim/conv2d.hpp"
#include "optim/dense.hpp"
#include "optim/flatten.hpp"
#include "optim/max_pool2d.hpp"
#include "optim/relu.hpp"
#include "tolerances.hpp"

using namespace troupe::optim;
namespace tol = troupe::test;

namespace {

/// A layer set up for one input shape with its parameters in local buffers.
struct bound_layer {
  std::unique_ptr<layer<double>> lay;
  shape in;
  shape out;
  range_table table;
  std::vector<double> params;
  std::vector<double> grads;
};

bound_layer bind_layer(std::unique_ptr<layer<double>> lay, shape in,
                       std::uint64_t seed) {
  bound_layer b;
  b.lay = std::move(lay);
  b.in = in;
  b.out = b.lay->setup(in);
  b.lay->declare(b.table, "x");
  b.params.assign(b.table.total(), 0.0);
  b.grads.assign(b.table.total(), 0.0);
  b.lay->bind(b.params.data(), b.grads.data());
  rng gen{seed};
  b.lay->init(gen);
  return b;
}

matrix<double> random_matrix(Eigen::Index rows, Eigen::Index cols, rng& gen,
                             double lo = -1, double hi = 1) {
  matrix<double> m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i)
    m.data()[i] = gen.uniform(lo, hi);
  return m;
}

/// Checks the parameter and input gradients of `b` at `x` against central
/// differences of the loss sum(out .* r) for a random r.
void check_gradients(bound_layer& b, matrix<double> x, std::uint64_t seed) {
  INFO("gradient check seed " << seed);
  rng gen{seed};
  matrix<double> out;
  b.lay->forward(x, out);
  REQUIRE(out.rows() == static_cast<Eigen::Index>(b.out.size()));
  REQUIRE(out.cols() == x.cols());
  const matrix<double> r = random_matrix(out.rows(), out.cols(), gen);
  matrix<double> din;
  std::fill(b.grads.begin(), b.grads.end(), 12345.0); // must be overwritten
  b.lay->backward(x, out, r, &din);
  REQUIRE(din.rows() == x.rows());
  REQUIRE(din.cols() == x.cols());
  auto loss = [&] {
    b.lay->forward(x, out);
    return (out.array() * r.array()).sum();
  };
  tol::grad_comparison cmp;
  for (const auto& range : b.table.ranges())
    for (std::size_t i = 0; i < range.size; ++i) {
      const std::size_t j = range.offset + i;
      cmp.add(range.name + "[" + std::to_string(i) + "]", b.grads[j],
              tol::central_difference(loss, b.params[j]));
    }
  for (Eigen::Index i = 0; i < x.size(); ++i)
    cmp.add("input[" + std::to_string(i) + "]", din.data()[i],
            tol::central_difference(loss, x.data()[i]));
  INFO(cmp.report());
  CHECK(cmp.scale() > 0);
  CHECK(cmp.worst() < tol::layer_grad_rel);
}

std::unique_ptr<layer<double>> make_conv(int cout, int k, int stride,
                                         int padding) {
  conv2d_options opts;
  opts.out_channels = cout;
  opts.kernel = k;
  opts.stride = stride;
  opts.padding = padding;
  return std::make_unique<conv2d<double>>(opts);
}

/// out[co][b][oh][ow] by the textbook formula, reading the weight as
/// PyTorch's [Cout][Cin][k][k] and the input as planes (C, B, H, W).
std::vector<double> naive_conv(const std::vector<double>& p, const double* x,
                               shape in, int batch, const conv2d_options& o) {
  const int ho = (in.h + 2 * o.padding - o.kernel) / o.stride + 1;
  const int wo = (in.w + 2 * o.padding - o.kernel) / o.stride + 1;
  const int k = o.kernel;
  const double* bias = p.data() + std::size_t(o.out_channels) * in.c * k * k;
  std::vector<double> out(std::size_t(o.out_channels) * batch * ho * wo);
  for (int co = 0; co < o.out_channels; ++co)
    for (int b = 0; b < batch; ++b)
      for (int oh = 0; oh < ho; ++oh)
        for (int ow = 0; ow < wo; ++ow) {
          double sum = bias[co];
          for (int ci = 0; ci < in.c; ++ci)
            for (int ki = 0; ki < k; ++ki)
              for (int kj = 0; kj < k; ++kj) {
                const int ih = oh * o.stride - o.padding + ki;
                const int iw = ow * o.stride - o.padding + kj;
                if (ih < 0 || ih >= in.h || iw < 0 || iw >= in.w)
                  continue;
                sum += p[((co * in.c + ci) * k + ki) * k + kj]
                       * x[((ci * batch + b) * in.h + ih) * in.w + iw];
              }
          out[((co * batch + b) * ho + oh) * wo + ow] = sum;
        }
  return out;
}

double max_abs_diff(const double* x, const double* y, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i)
    m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

} // namespace

TEST_CASE("dense computes W * x + b with W stored out x in column-major") {
  auto b = bind_layer(std::make_unique<dense<double>>(3), shape{4, 1, 1}, 11);
  CHECK(b.out == shape{3, 1, 1});
  REQUIRE(b.table.ranges().size() == 2);
  CHECK(b.table.ranges()[0].name == "x.weight");
  CHECK(b.table.ranges()[0].size == 12);
  CHECK(b.table.ranges()[1].name == "x.bias");
  CHECK(b.table.ranges()[1].kind == range_kind::bias);
  rng gen{12};
  const matrix<double> x = random_matrix(4, 2, gen);
  matrix<double> out;
  b.lay->forward(x, out);
  for (int s = 0; s < 2; ++s)
    for (int o = 0; o < 3; ++o) {
      double expected = b.params[12 + o];
      for (int i = 0; i < 4; ++i)
        expected += b.params[i * 3 + o] * x(i, s);
      CHECK(out(o, s) == Approx(expected).epsilon(tol::naive_rel));
    }
}

TEST_CASE("layer init follows PyTorch's uniform(+-1/sqrt(fan_in))") {
  auto d = bind_layer(std::make_unique<dense<double>>(50), shape{40, 1, 1}, 3);
  auto c = bind_layer(make_conv(8, 3, 1, 1), shape{5, 9, 9}, 3);
  for (auto* b : {&d, &c}) {
    const double fan_in = b == &d ? 40.0 : 5.0 * 3 * 3;
    const double bound = 1.0 / std::sqrt(fan_in);
    const auto [lo, hi]
        = std::minmax_element(b->params.begin(), b->params.end());
    INFO("fan_in " << fan_in);
    CHECK(*lo >= -bound);
    CHECK(*hi < bound);
    // Spread over the interval: the extremes lie close to the bounds.
    CHECK(*lo < -0.9 * bound);
    CHECK(*hi > 0.9 * bound);
  }
  // Same seed, same values; another seed, other values.
  auto d2 = bind_layer(std::make_unique<dense<double>>(50), shape{40, 1, 1}, 3);
  auto d3 = bind_layer(std::make_unique<dense<double>>(50), shape{40, 1, 1}, 4);
  CHECK(d.params == d2.params);
  CHECK(d.params != d3.params);
}

TEST_CASE("dense gradients match finite differences") {
  auto b = bind_layer(std::make_unique<dense<double>>(5), shape{7, 1, 1}, 21);
  rng gen{22};
  check_gradients(b, random_matrix(7, 3, gen), 23);
}

TEST_CASE("relu passes positives, blocks negatives, gradients away from 0") {
  auto b = bind_layer(std::make_unique<relu<double>>(), shape{3, 4, 5}, 31);
  CHECK(b.out == shape{3, 4, 5});
  CHECK(b.table.total() == 0);
  rng gen{32};
  matrix<double> x(60, 2);
  for (Eigen::Index i = 0; i < x.size(); ++i) // |x| >= 0.1: no kink nearby
    x.data()[i] = (gen.uniform() < 0.5 ? -1 : 1) * gen.uniform(0.1, 1.0);
  matrix<double> out;
  b.lay->forward(x, out);
  for (Eigen::Index i = 0; i < x.size(); ++i)
    CHECK(out.data()[i] == std::max(x.data()[i], 0.0));
  check_gradients(b, x, 33);
}

TEST_CASE("tanh, sigmoid and gelu: values, stability and gradients") {
  // Reference values: tanh(1), sigmoid(1), 1 * Phi(1), -1 * Phi(-1).
  struct value_case {
    activation_kind k;
    double x, y;
  };
  for (const auto& vc :
       {value_case{activation_kind::tanh, 1.0, 0.76159415595576489},
        value_case{activation_kind::tanh, -2.0, -0.96402758007581690},
        value_case{activation_kind::sigmoid, 0.0, 0.5},
        value_case{activation_kind::sigmoid, 1.0, 0.73105857863000488},
        value_case{activation_kind::sigmoid, -800.0, 0.0},
        value_case{activation_kind::sigmoid, 800.0, 1.0},
        value_case{activation_kind::gelu, 1.0, 0.84134474606854293},
        value_case{activation_kind::gelu, -1.0, -0.15865525393145707},
        value_case{activation_kind::gelu, 0.0, 0.0}}) {
    INFO(to_string(vc.k) << "(" << vc.x << ")");
    activation<double> a{vc.k};
    CHECK(a.setup(shape{1, 1, 1}) == shape{1, 1, 1});
    matrix<double> x(1, 1), y;
    x(0, 0) = vc.x;
    a.forward(x, y);
    CHECK(std::isfinite(y(0, 0)));
    CHECK(y(0, 0) == Approx(vc.y).margin(1e-15));
  }
  for (auto k : {activation_kind::tanh, activation_kind::sigmoid,
                 activation_kind::gelu}) {
    INFO(to_string(k));
    auto b = bind_layer(std::make_unique<activation<double>>(k), shape{2, 3, 4},
                        35);
    CHECK(b.out == shape{2, 3, 4});
    CHECK(b.table.total() == 0);
    CHECK(b.lay->kind() == to_string(k));
    rng gen{36};
    check_gradients(b, random_matrix(24, 3, gen, -3, 3), 37);
  }
}

TEST_CASE("avg_pool2d takes window means and spreads gradients evenly") {
  for (int k : {2, 3}) {
    INFO("k " << k);
    const shape in{2, 7, 8};
    auto b = bind_layer(std::make_unique<avg_pool2d<double>>(k), in, 65);
    CHECK(b.out == shape{2, 7 / k, 8 / k});
    CHECK(b.lay->kind() == "avgpool");
    const int batch = 3;
    rng gen{66};
    const matrix<double> x = random_matrix(in.size(), batch, gen);
    matrix<double> out;
    b.lay->forward(x, out);
    // The mean of each window, planes (C, B, H, W).
    for (int pl = 0; pl < in.c * batch; ++pl)
      for (int oh = 0; oh < b.out.h; ++oh)
        for (int ow = 0; ow < b.out.w; ++ow) {
          double sum = 0;
          for (int di = 0; di < k; ++di)
            for (int dj = 0; dj < k; ++dj)
              sum += x.data()[(pl * in.h + oh * k + di) * in.w + ow * k + dj];
          CHECK(out.data()[(pl * b.out.h + oh) * b.out.w + ow]
                == Approx(sum / (k * k)).epsilon(1e-14));
        }
    check_gradients(b, x, 67);
  }
  CHECK_THROWS_AS(avg_pool2d<double>{0}, std::invalid_argument);
  avg_pool2d<double> big{4};
  CHECK_THROWS_AS(big.setup(shape{1, 3, 8}), std::invalid_argument);
}

TEST_CASE("conv2d matches the textbook convolution") {
  struct param_case {
    shape in;
    int cout, k, stride, padding;
  };
  for (const auto& pc :
       {param_case{{1, 6, 6}, 2, 3, 1, 0}, param_case{{3, 5, 7}, 4, 3, 1, 1},
        param_case{{2, 8, 8}, 3, 5, 1, 2}, param_case{{2, 7, 6}, 3, 3, 2, 1},
        param_case{{2, 6, 6}, 17, 3, 1, 1}, // Eigen GEMM
        param_case{{1, 28, 28}, 6, 5, 1, 2}}) {
    INFO("in " << pc.in.c << "x" << pc.in.h << "x" << pc.in.w << " cout "
               << pc.cout << " k " << pc.k << " stride " << pc.stride
               << " padding " << pc.padding);
    auto b = bind_layer(make_conv(pc.cout, pc.k, pc.stride, pc.padding), pc.in,
                        41);
    rng gen{42};
    const int batch = 3;
    const matrix<double> x = random_matrix(pc.in.size(), batch, gen);
    matrix<double> out;
    b.lay->forward(x, out);
    const auto& opts = static_cast<conv2d<double>&>(*b.lay).options();
    const auto expected = naive_conv(b.params, x.data(), pc.in, batch, opts);
    REQUIRE(static_cast<std::size_t>(out.size()) == expected.size());
    CHECK(max_abs_diff(out.data(), expected.data(), expected.size())
          < tol::naive_rel * 10);
  }
}

TEST_CASE("conv2d gradients match finite differences") {
  struct grad_case {
    shape in;
    int cout, k, stride, padding;
  };
  for (const auto& gc :
       {grad_case{{1, 5, 5}, 2, 3, 1, 0}, grad_case{{3, 5, 6}, 2, 3, 1, 1},
        grad_case{{2, 4, 4}, 3, 2, 1, 2}, grad_case{{2, 7, 7}, 2, 3, 2, 1},
        grad_case{{1, 5, 5}, 13, 3, 1, 1}, grad_case{{2, 4, 4}, 17, 3, 1, 0}}) {
    INFO("in " << gc.in.c << "x" << gc.in.h << "x" << gc.in.w << " cout "
               << gc.cout << " k " << gc.k << " stride " << gc.stride
               << " padding " << gc.padding);
    auto b = bind_layer(make_conv(gc.cout, gc.k, gc.stride, gc.padding), gc.in,
                        51);
    rng gen{52};
    check_gradients(b, random_matrix(gc.in.size(), 2, gen), 53);
  }
}

TEST_CASE("max_pool2d takes window maxima and routes gradients to them") {
  for (int k : {2, 3}) {
    const shape in{2, 7, 8};
    auto b = bind_layer(std::make_unique<max_pool2d<double>>(k), in, 61);
    CHECK(b.out == shape{2, 7 / k, 8 / k});
    const int batch = 3;
    // Distinct values at least 0.01 apart: no ties within the FD step.
    std::vector<double> values(in.size() * batch);
    std::iota(values.begin(), values.end(), 0.0);
    rng gen{62};
    for (std::size_t i = values.size() - 1; i > 0; --i)
      std::swap(values[i], values[gen.below(i + 1)]);
    matrix<double> x(in.size(), batch);
    for (Eigen::Index i = 0; i < x.size(); ++i)
      x.data()[i] = 0.01 * values[i];
    matrix<double> out;
    b.lay->forward(x, out);
    const int planes = in.c * batch;
    for (int pl = 0; pl < planes; ++pl)
      for (int oh = 0; oh < b.out.h; ++oh)
        for (int ow = 0; ow < b.out.w; ++ow) {
          double m = -1e300;
          for (int i = 0; i < k; ++i)
            for (int j = 0; j < k; ++j)
              m = std::max(
                  m, x.data()[(pl * in.h + oh * k + i) * in.w + ow * k + j]);
          CHECK(out.data()[(pl * b.out.h + oh) * b.out.w + ow] == m);
        }
    check_gradients(b, x, 63);
  }
}

TEST_CASE("flatten reorders planes (C, B, H, W) into (C, H, W) columns") {
  const shape in{3, 2, 2};
  auto b = bind_layer(std::make_unique<flatten<double>>(), in, 71);
  CHECK(b.out == shape{12, 1, 1});
  const int batch = 2;
  matrix<double> x(12, batch);
  // Encode (c, b, h, w) in the value at its planes position.
  for (int c = 0; c < 3; ++c)
    for (int s = 0; s < batch; ++s)
      for (int hw = 0; hw < 4; ++hw)
        x.data()[(c * batch + s) * 4 + hw] = 1000 * c + 100 * s + hw;
  matrix<double> out;
  b.lay->forward(x, out);
  for (int s = 0; s < batch; ++s)
    for (int c = 0; c < 3; ++c)
      for (int hw = 0; hw < 4; ++hw)
        CHECK(out(c * 4 + hw, s) == 1000 * c + 100 * s + hw);
  matrix<double> din;
  b.lay->backward(x, out, out, &din);
  CHECK(din == x); // the inverse permutation
  rng gen{72};
  check_gradients(b, random_matrix(12, batch, gen), 73);
}

TEST_CASE("layers reject bad settings and unusable shapes") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(dense<float>{0}, Contains("out_features"));
  CHECK_THROWS_WITH(max_pool2d<float>{0}, Contains("kernel"));
  conv2d_options o;
  o.out_channels = 4;
  o.kernel = 3;
  o.stride = 0;
  CHECK_THROWS_WITH(conv2d<float>{o}, Contains("stride"));
  o.stride = 1;
  o.padding = -1;
  CHECK_THROWS_WITH(conv2d<float>{o}, Contains("padding"));
  o.padding = 0;
  o.kernel = 0;
  CHECK_THROWS_WITH(conv2d<float>{o}, Contains("kernel"));
  o.kernel = 5;
  conv2d<float> conv{o};
  CHECK_THROWS_AS(conv.setup(shape{1, 4, 4}), std::invalid_argument);
  CHECK_THROWS_WITH(conv.setup(shape{1, 4, 4}), Contains("smaller than"));
  CHECK(conv.setup(shape{1, 5, 5}) == shape{4, 1, 1});
  max_pool2d<float> pool{3};
  CHECK_THROWS_WITH(pool.setup(shape{2, 2, 9}), Contains("smaller than"));
}
