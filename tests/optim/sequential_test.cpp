#include <cmath>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "grad_check.hpp"
#include "optim/conv2d.hpp"
#include "optim/dense.hpp"
#include "optim/flatten.hpp"
#include "optim/loss.hpp"
#include "optim/max_pool2d.hpp"
#include "optim/relu.hpp"
#include "optim/sequential.hpp"
#include "tolerances.hpp"

using namespace troupe::optim;
namespace tol = troupe::test;
using Catch::Matchers::Contains;

namespace {

template <class T>
matrix<T> random_batch(const shape& s, int batch, rng& gen) {
  matrix<T> x(static_cast<Eigen::Index>(s.size()), batch);
  for (Eigen::Index i = 0; i < x.size(); ++i)
    x.data()[i] = static_cast<T>(gen.uniform());
  return x;
}

std::vector<std::int32_t> random_labels(int batch, int classes, rng& gen) {
  std::vector<std::int32_t> y(batch);
  for (auto& v : y)
    v = static_cast<std::int32_t>(gen.below(classes));
  return y;
}

struct expected_range {
  const char* name;
  std::size_t size;
};

void check_ranges(const range_table& t,
                  const std::vector<expected_range>& expected) {
  REQUIRE(t.ranges().size() == expected.size());
  std::size_t offset = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& r = t.ranges()[i];
    CHECK(r.name == expected[i].name);
    CHECK(r.size == expected[i].size);
    CHECK(r.offset == offset);
    CHECK(r.kind
          == (r.name.find(".bias") != std::string::npos ? range_kind::bias
                                                        : range_kind::weight));
    offset += r.size;
  }
  CHECK(t.total() == offset);
}

} // namespace

TEST_CASE("built-in models have the documented layers and ranges") {
  CHECK(model_names() == std::vector<std::string>{"logreg", "mlp", "lenet"});
  auto logreg = make_model<float>("logreg");
  CHECK(logreg.size() == 7850);
  CHECK(logreg.names() == std::vector<std::string>{"dense1"});
  check_ranges(logreg.ranges(), {{"dense1.weight", 7840}, {"dense1.bias", 10}});

  auto mlp = make_model<float>("mlp");
  CHECK(mlp.size() == 235146);
  CHECK(mlp.names()
        == std::vector<std::string>{"dense1", "relu1", "dense2", "relu2",
                                    "dense3"});
  check_ranges(mlp.ranges(), {{"dense1.weight", 200704},
                              {"dense1.bias", 256},
                              {"dense2.weight", 32768},
                              {"dense2.bias", 128},
                              {"dense3.weight", 1280},
                              {"dense3.bias", 10}});

  auto lenet = make_model<double>("lenet");
  CHECK(lenet.size() == 61706);
  CHECK(lenet.names()
        == std::vector<std::string>{"conv1", "relu1", "pool1", "conv2", "relu2",
                                    "pool2", "flatten1", "dense1", "relu3",
                                    "dense2", "relu4", "dense3"});
  check_ranges(lenet.ranges(), {{"conv1.weight", 150},
                                {"conv1.bias", 6},
                                {"conv2.weight", 2400},
                                {"conv2.bias", 16},
                                {"dense1.weight", 48000},
                                {"dense1.bias", 120},
                                {"dense2.weight", 10080},
                                {"dense2.bias", 84},
                                {"dense3.weight", 840},
                                {"dense3.bias", 10}});
  for (auto* m : {&logreg, &mlp}) {
    CHECK(m->input_shape() == shape{1, 28, 28});
    CHECK(m->output_shape() == shape{10, 1, 1});
  }
  CHECK(lenet.output_shape() == shape{10, 1, 1});
  // Activations of one batch have the documented shapes.
  rng gen{1};
  lenet.init(2);
  const auto& logits = lenet.forward(random_batch<double>({1, 28, 28}, 3, gen));
  CHECK(logits.rows() == 10);
  CHECK(logits.cols() == 3);
  // Other input shapes and class counts flow through.
  auto small = make_model<float>("lenet", shape{1, 32, 32}, 7);
  CHECK(small.output_shape() == shape{7, 1, 1});
  CHECK(small.ranges().find("dense1.weight")->size == 120 * 16 * 6 * 6);
}

TEST_CASE("init is deterministic and within PyTorch's bounds") {
  for (const auto& name : model_names()) {
    INFO(name);
    auto a = make_model<float>(name);
    auto b = make_model<float>(name);
    auto c = make_model<float>(name);
    a.init(17);
    b.init(17);
    c.init(18);
    CHECK(std::memcmp(a.params(), b.params(), a.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(a.params(), c.params(), a.size() * sizeof(float)) != 0);
  }
  auto m = make_model<double>("lenet");
  m.init(5);
  // fan_in per layer: conv1 1*5*5, conv2 6*5*5, dense 400, 120, 84.
  const std::vector<std::pair<std::string, double>> fan_in{{"conv1", 25},
                                                           {"conv2", 150},
                                                           {"dense1", 400},
                                                           {"dense2", 120},
                                                           {"dense3", 84}};
  for (const auto& [layer_name, fan] : fan_in)
    for (const char* suffix : {".weight", ".bias"}) {
      const auto r = m.ranges().find(layer_name + suffix);
      REQUIRE(r);
      const double bound = 1 / std::sqrt(fan);
      double lo = 0;
      double hi = 0;
      for (std::size_t i = r->offset; i < r->offset + r->size; ++i) {
        lo = std::min(lo, m.params()[i]);
        hi = std::max(hi, m.params()[i]);
      }
      INFO(r->name);
      CHECK(lo >= -bound);
      CHECK(hi < bound);
      CHECK(hi - lo > bound); // spread, not a constant
    }
}

TEST_CASE("a moved model keeps its parameters bound") {
  auto a = make_model<float>("lenet");
  a.init(9);
  rng gen{10};
  const matrix<float> x = random_batch<float>(a.input_shape(), 4, gen);
  const matrix<float> before = a.forward(x);
  sequential<float> b = std::move(a);
  CHECK(b.forward(x) == before);
  auto c = make_model<float>("lenet");
  c = std::move(b);
  c.params()[c.ranges().find("dense3.bias")->offset] += 1.0f;
  const matrix<float> after = c.forward(x);
  CHECK(((after - before).row(0).array() - 1.0f).abs().maxCoeff() < 1e-5f);
  CHECK((after - before).bottomRows(9).cwiseAbs().maxCoeff() == 0.0f);
}

TEST_CASE("samples are independent of the batch they come in") {
  // Also exercises buffer resizing when the batch size changes.
  auto m = make_model<double>("lenet");
  m.init(12);
  rng gen{13};
  const matrix<double> x5 = random_batch<double>(m.input_shape(), 5, gen);
  const auto y5 = random_labels(5, 10, gen);
  const matrix<double> l5 = m.forward(x5);
  const matrix<double> x2 = x5.rightCols(2);
  const matrix<double> l2 = m.forward(x2);
  CHECK((l2 - l5.rightCols(2)).cwiseAbs().maxCoeff() < tol::naive_rel);
  // Gradients: the batch mean splits into a weighted sum of sub-batches.
  m.loss_and_gradient(x2, y5.data() + 3);
  const vector<double> g2
      = Eigen::Map<const vector<double>>(m.grads(), m.size());
  m.loss_and_gradient(x5.leftCols(3), y5.data());
  const vector<double> g3
      = Eigen::Map<const vector<double>>(m.grads(), m.size());
  m.loss_and_gradient(x5, y5.data());
  const vector<double> g5
      = Eigen::Map<const vector<double>>(m.grads(), m.size());
  const vector<double> combined = (3 * g3 + 2 * g2) / 5;
  CHECK((combined - g5).cwiseAbs().maxCoeff()
        < tol::naive_rel * g5.cwiseAbs().maxCoeff());
}

TEST_CASE("model gradients match finite differences") {
  for (const auto& name : model_names()) {
    const std::uint64_t seed = 1000 + name.size();
    std::cout << "sequential_test: gradient check of " << name << ", seed "
              << seed << "\n";
    INFO(name << " seed " << seed);
    rng gen{seed};
    auto m = make_model<double>(name);
    m.init(seed);
    const int batch = 3;
    const matrix<double> x = random_batch<double>(m.input_shape(), batch, gen);
    const auto y = random_labels(batch, 10, gen);
    const double loss = m.loss_and_gradient(x, y.data());
    CHECK(
        loss
        == Approx(softmax_cross_entropy(m.forward(x), y.data(),
                                        static_cast<matrix<double>*>(nullptr)))
               .epsilon(1e-14));
    m.loss_and_gradient(x, y.data());
    const std::vector<double> analytic(m.grads(), m.grads() + m.size());
    auto f = [&] {
      return softmax_cross_entropy(m.forward(x), y.data(),
                                   static_cast<matrix<double>*>(nullptr));
    };
    // Every coordinate of logreg; for the others 20 per range plus 200
    // drawn from the whole vector.
    std::vector<std::size_t> coords;
    if (m.size() < 10000) {
      for (std::size_t i = 0; i < m.size(); ++i)
        coords.push_back(i);
    } else {
      for (const auto& r : m.ranges().ranges())
        for (int i = 0; i < 20; ++i)
          coords.push_back(r.offset + gen.below(r.size));
      for (int i = 0; i < 200; ++i)
        coords.push_back(gen.below(m.size()));
    }
    tol::grad_comparison cmp;
    for (auto i : coords)
      cmp.add("param[" + std::to_string(i) + "]", analytic[i],
              tol::central_difference(f, m.params()[i]));
    INFO(cmp.report());
    CHECK(cmp.scale() > 0);
    CHECK(cmp.worst() < tol::layer_grad_rel);
  }
}

TEST_CASE("float and double models produce the same logits and gradients") {
  for (const auto& name : model_names()) {
    INFO(name);
    auto mf = make_model<float>(name);
    auto md = make_model<double>(name);
    mf.init(77);
    md.init(77);
    rng gen{78};
    // A batch of 37 leaves partial blocks in every kernel.
    const matrix<double> xd = random_batch<double>(md.input_shape(), 37, gen);
    const matrix<float> xf = xd.cast<float>();
    const matrix<double> ld = md.forward(xd);
    const matrix<double> lf = mf.forward(xf).cast<double>();
    const double scale = std::max(1.0, ld.cwiseAbs().maxCoeff());
    CHECK((lf - ld).cwiseAbs().maxCoeff() < tol::float_double_rel * scale);
    const auto y = random_labels(37, 10, gen);
    md.loss_and_gradient(xd, y.data());
    mf.loss_and_gradient(xf, y.data());
    const auto gd = Eigen::Map<const vector<double>>(md.grads(), md.size());
    const auto gf = Eigen::Map<const vector<float>>(mf.grads(), mf.size());
    const double gscale = gd.cwiseAbs().maxCoeff();
    CHECK(gscale > 0);
    CHECK((gf.cast<double>() - gd).cwiseAbs().maxCoeff()
          < tol::float_double_rel * gscale);
  }
}

TEST_CASE("loss_and_gradient drives the loss down under plain SGD") {
  // mlp memorizes 16 random images with random labels within 40 steps.
  auto m = make_model<float>("mlp");
  m.init(3);
  rng gen{4};
  const matrix<float> x = random_batch<float>(m.input_shape(), 16, gen);
  const auto y = random_labels(16, 10, gen);
  const float first = m.loss_and_gradient(x, y.data());
  float last = first;
  for (int step = 0; step < 40; ++step) {
    for (std::size_t i = 0; i < m.size(); ++i)
      m.params()[i] -= 0.1f * m.grads()[i];
    last = m.loss_and_gradient(x, y.data());
  }
  INFO("loss " << first << " -> " << last);
  CHECK(last < 0.25f * first);
}

TEST_CASE("bad models and inputs are rejected with a reason") {
  CHECK_THROWS_WITH(make_model<float>("resnet"), Contains("resnet")
                                                     && Contains("logreg")
                                                     && Contains("lenet"));
  // Kernel larger than the padded input, named by layer.
  CHECK_THROWS_WITH(make_model<float>("lenet", shape{1, 8, 8}),
                    Contains("conv2") && Contains("smaller than"));
  // Dense directly on multi-channel planes needs a flatten.
  sequential<float> m{shape{1, 8, 8}};
  conv2d_options o;
  o.out_channels = 3;
  o.kernel = 3;
  m.add<conv2d<float>>(o).add<dense<float>>(4);
  CHECK_THROWS_WITH(m.finalize(), Contains("dense1") && Contains("flatten"));
  // Multi-channel images enter as columns, which conv2d cannot read.
  sequential<float> rgb{shape{3, 8, 8}};
  rgb.add<conv2d<float>>(o).add<flatten<float>>();
  CHECK_THROWS_WITH(rgb.finalize(), Contains("conv1") && Contains("planes"));
  // Logits must be per-sample columns.
  sequential<float> planes_out{shape{1, 8, 8}};
  planes_out.add<conv2d<float>>(o);
  CHECK_THROWS_WITH(planes_out.finalize(), Contains("planes layout"));
  sequential<float> empty{shape{1, 2, 2}};
  CHECK_THROWS_WITH(empty.finalize(), Contains("no layers"));
  sequential<float> zero{shape{0, 2, 2}};
  zero.add<dense<float>>(2);
  CHECK_THROWS_WITH(zero.finalize(), Contains("input shape"));
  // Wrong input size, and labels outside [0, classes).
  auto logreg = make_model<float>("logreg");
  logreg.init(1);
  matrix<float> bad(783, 2);
  bad.setZero();
  CHECK_THROWS_WITH(logreg.forward(bad), Contains("783") && Contains("784"));
  matrix<float> x(784, 2);
  x.setZero();
  const std::int32_t labels[] = {3, 10};
  CHECK_THROWS_WITH(logreg.loss_and_gradient(x, labels), Contains("label 10"));
  // Lifecycle misuse.
  CHECK_THROWS_AS(logreg.add<relu<float>>(), std::logic_error);
  CHECK_THROWS_AS(logreg.finalize(), std::logic_error);
}

TEST_CASE("softmax cross-entropy and accuracy on known values") {
  matrix<double> logits(3, 2);
  logits << 1, 0, 2, 0, 3, 1000; // the second column would overflow exp()
  const std::int32_t labels[] = {2, 0};
  matrix<double> d;
  const double loss = softmax_cross_entropy(logits, labels, &d);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const double l0 = -std::log(std::exp(3.0) / z);
  const double l1 = 1000.0; // -log(e^0 / (2 + e^1000))
  CHECK(loss == Approx((l0 + l1) / 2).epsilon(1e-12));
  CHECK(d(0, 0) == Approx(std::exp(1.0) / z / 2).epsilon(1e-12));
  CHECK(d(2, 0) == Approx((std::exp(3.0) / z - 1) / 2).epsilon(1e-12));
  CHECK(d(0, 1) == Approx(-0.5).epsilon(1e-12));
  CHECK(d(2, 1) == Approx(0.5).epsilon(1e-12));
  CHECK(d.colwise().sum().cwiseAbs().maxCoeff() < 1e-15);
  CHECK(count_correct(logits, labels) == 1);
  const std::int32_t right[] = {2, 2};
  CHECK(count_correct(logits, right) == 2);
}
