// TorchScript modules as layers (optim/torchscript_layer.hpp), with modules
// written in TorchScript from C++ (no Python): one equal to troupe's mlp
// gives its loss and gradients; a small module's gradients (and its input's,
// through a dense layer before it) agree with central differences in double;
// a batch norm's running statistics are buffers that a training pass moves
// and a calibration averages; files that are not modules are refused naming
// them. Skipped, with a message, in a build without libtorch.

#include <iostream>

#ifdef TROUPE_HAVE_TORCH
#include <torch/script.h>
// glog's CHECK, which libtorch's headers define, gives way to Catch's.
#undef CHECK
#endif

#include <catch2/catch.hpp>

#ifndef TROUPE_HAVE_TORCH

TEST_CASE("torchscript: skipped without libtorch") {
  std::cout << "SKIPPED: troupe was built without libtorch (install "
               "libtorch-dev and reconfigure)\n";
}

#else

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grad_check.hpp"
#include "optim/model_file.hpp"
#include "optim/model_spec.hpp"
#include "optim/torchscript_layer.hpp"
#include "tolerances.hpp"

using namespace troupe::optim;
namespace fs = std::filesystem;
namespace tol = troupe::test;

namespace {

fs::path work_dir() {
  static const fs::path dir = [] {
    auto d = fs::path{TROUPE_BINARY_DIR} / "torchscript_test";
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

/// Saves `m` as NAME.pt in the test's folder; returns the path.
std::string save(torch::jit::Module& m, const std::string& name) {
  auto path = (work_dir() / (name + ".pt")).string();
  m.save(path);
  return path;
}

/// The description of one module.
std::string described(const std::string& path) {
  return nlohmann::json{{"layers", {{{"type", "torchscript"}, {"file", path}}}}}
      .dump();
}

template <class T>
matrix<T> uniform_batch(std::size_t rows, int batch, rng& gen, double lo,
                        double hi) {
  matrix<T> x(static_cast<Eigen::Index>(rows), batch);
  for (Eigen::Index i = 0; i < x.size(); ++i)
    x.data()[i] = static_cast<T>(gen.uniform(lo, hi));
  return x;
}

std::vector<std::int32_t> labels_for(int batch, int classes, rng& gen) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(batch));
  for (auto& l : out)
    l = static_cast<std::int32_t>(
        gen.below(static_cast<std::uint64_t>(classes)));
  return out;
}

/// The values of a model's tensors in the file's (PyTorch's) layout.
std::vector<float> flattened(const sequential<float>& m) {
  std::vector<float> out;
  for (const auto& t : model_tensors(m))
    out.insert(out.end(), t.values.begin(), t.values.end());
  return out;
}

/// Largest |a - b| relative to the largest |b|.
double rel_diff(const float* a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

} // namespace

TEST_CASE("torchscript: a module equal to mlp gives mlp's loss and gradients") {
  auto ref = make_model<float>("mlp", shape{1, 28, 28}, 10);
  ref.init(7);
  // The module's parameters are mlp's tensors in PyTorch's layout, in the
  // same order: fc0_weight, fc0_bias, fc2_weight, ... for "0.weight",
  // "0.bias", "2.weight", ...
  torch::jit::Module net{"Mlp"};
  for (const auto& t : model_tensors(ref)) {
    std::vector<std::int64_t> sizes(t.shape.begin(), t.shape.end());
    auto v = torch::from_blob(const_cast<float*>(t.values.data()), sizes,
                              torch::kFloat)
                 .clone()
                 .requires_grad_(true);
    auto dot = t.name.find('.');
    net.register_parameter(
        "fc" + t.name.substr(0, dot) + "_" + t.name.substr(dot + 1), v, false);
  }
  net.define(R"(
def forward(self, x):
    x = x.flatten(1)
    x = torch.relu(torch.addmm(self.fc0_bias, x, self.fc0_weight.t()))
    x = torch.relu(torch.addmm(self.fc2_bias, x, self.fc2_weight.t()))
    return torch.addmm(self.fc4_bias, x, self.fc4_weight.t())
)");
  auto path = save(net, "mlp");
  auto m = build_model<float>(described(path), shape{1, 28, 28}, 10);
  m.init(99); // the module's values whatever the seed
  REQUIRE(m.size() == ref.size());
  CHECK(m.ranges().ranges()[0].name == "torchscript1.fc0_weight");
  CHECK(m.ranges().ranges()[0].kind == range_kind::weight);
  CHECK(m.ranges().ranges()[1].kind == range_kind::bias);
  REQUIRE(rel_diff(m.params(), flattened(ref)) == 0);

  rng gen{11};
  const int batch = 32;
  auto x = uniform_batch<float>(784, batch, gen, 0, 1);
  auto labels = labels_for(batch, 10, gen);
  for (int step = 0; step < 3; ++step) {
    const float want = ref.loss_and_gradient(x, labels.data());
    const float got = m.loss_and_gradient(x, labels.data());
    auto grads = make_model<float>("mlp", shape{1, 28, 28}, 10);
    std::copy(ref.grads(), ref.grads() + ref.size(), grads.params());
    const double dg = rel_diff(m.grads(), flattened(grads));
    std::cout << "torchscript_test: mlp step " << step << ": loss " << want
              << " vs " << got << ", gradients' largest difference " << dg
              << " of the largest\n";
    CHECK(std::abs(want - got) <= 1e-5 * std::abs(want));
    CHECK(dg < 1e-5);
    // An SGD step on both flat vectors: the module reads troupe's buffer.
    for (std::size_t i = 0; i < ref.size(); ++i) {
      ref.params()[i] -= 0.1f * ref.grads()[i];
      m.params()[i] -= 0.1f * m.grads()[i];
    }
  }
  const auto& a = ref.forward(x);
  const auto& b = m.forward(x);
  CHECK((a - b).cwiseAbs().maxCoeff() <= 1e-5 * a.cwiseAbs().maxCoeff());
  // Saved with the module's shapes, rebuilt from the description.
  auto tensors = model_tensors(m);
  CHECK(tensors[0].name == "0.fc0_weight");
  CHECK(tensors[0].shape == std::vector<std::uint64_t>{256, 784});
  model_info info;
  info.model = model_description(described(path));
  auto loaded = decode_model(encode_model(m, info), "m.safetensors");
  CHECK(rel_diff(loaded.model.params(), flattened(m)) == 0);
}

TEST_CASE("torchscript: gradients agree with central differences (double)") {
  torch::manual_seed(5);
  torch::jit::Module net{"Small"};
  auto param = [&](const char* name, std::vector<std::int64_t> sizes) {
    net.register_parameter(name, (torch::randn(sizes) * 0.5).requires_grad_(),
                           false);
  };
  param("cw", {3, 2, 3, 3});
  param("cb", {3});
  param("fw", {4, 12});
  param("fb", {4});
  net.define(R"(
def forward(self, x):
    x = x.reshape([-1, 2, 4, 4])
    x = torch.tanh(torch.conv2d(x, self.cw, self.cb))
    return torch.addmm(self.fb, x.flatten(1), self.fw.t())
)");
  auto path = save(net, "small");
  // A dense layer first: the module is asked for its input's gradient.
  auto text = nlohmann::json{{"layers",
                              {{{"type", "dense"}, {"units", 32}},
                               {{"type", "torchscript"}, {"file", path}}}}}
                  .dump();
  auto m = build_model<double>(text, shape{5, 1, 1}, 4);
  m.init(3);
  rng gen{3};
  auto x = uniform_batch<double>(5, 6, gen, -1, 1);
  auto labels = labels_for(6, 4, gen);
  auto loss = [&] { return m.loss_and_gradient(x, labels.data()); };
  loss();
  const std::vector<double> analytic(m.grads(), m.grads() + m.size());
  tol::grad_comparison cmp;
  for (std::size_t i = 0; i < m.size(); ++i)
    cmp.add("param[" + std::to_string(i) + "]", analytic[i],
            tol::central_difference(loss, m.params()[i]));
  std::cout << "torchscript_test: gradient check: " << cmp.report() << "\n";
  INFO(cmp.report());
  CHECK(cmp.size() == 5 * 32 + 32 + 54 + 3 + 48 + 4);
  CHECK(cmp.worst() < tol::layer_grad_rel);
}

TEST_CASE("torchscript: batch norm's running statistics are buffers") {
  torch::jit::Module bn{"BatchNorm1d"};
  bn.register_attribute("training", c10::BoolType::get(), true);
  bn.register_parameter("weight", torch::ones({4}).requires_grad_(), false);
  bn.register_parameter("bias", torch::zeros({4}).requires_grad_(), false);
  bn.register_buffer("running_mean", torch::zeros({4}));
  bn.register_buffer("running_var", torch::ones({4}));
  bn.register_buffer("num_batches_tracked", torch::zeros({}, torch::kLong));
  bn.type()->addConstant("momentum", 0.1); // as PyTorch's scripted one
  bn.define(R"(
def forward(self, x):
    self.num_batches_tracked.add_(1)
    return torch.batch_norm(x, self.weight, self.bias, self.running_mean,
                            self.running_var, self.training, 0.1, 1e-5, False)
)");
  torch::jit::Module net{"Net"};
  net.register_attribute("training", c10::BoolType::get(), true);
  net.register_module("bn", bn);
  net.define(R"(
def forward(self, x):
    return self.bn.forward(x)
)");
  auto path = save(net, "bn");
  sequential<float> m{shape{4, 1, 1}};
  m.add<torchscript_layer<float>>(path, false);
  m.finalize();
  m.init(1);
  const auto& names = m.buffer_ranges().ranges();
  REQUIRE(names.size() == 2); // num_batches_tracked stays in the module
  CHECK(names[0].name == "torchscript1.bn.running_mean");
  CHECK(names[1].name == "torchscript1.bn.running_var");
  rng gen{8};
  auto stats = [](const matrix<float>& x, int f) {
    const auto row = x.row(f).cast<double>().array();
    const double mean = row.mean();
    const double var = (row - mean).square().sum() / (row.size() - 1);
    return std::pair<double, double>{mean, var};
  };
  auto x = uniform_batch<float>(4, 16, gen, 1, 3);
  auto labels = labels_for(16, 4, gen);
  m.loss_and_gradient(x, labels.data());
  for (int f = 0; f < 4; ++f) {
    auto [mean, var] = stats(x, f);
    CHECK(m.buffers()[f] == Approx(0.1 * mean).epsilon(1e-5));
    CHECK(m.buffers()[4 + f] == Approx(0.9 + 0.1 * var).epsilon(1e-5));
  }
  const std::vector<float> moved(m.buffers(), m.buffers() + 8);
  m.forward(x); // inference: the buffers stay
  CHECK(std::equal(moved.begin(), moved.end(), m.buffers()));
  // Calibration: the batches' statistics averaged with equal weights.
  auto y = uniform_batch<float>(4, 16, gen, -2, 0);
  m.reset_buffers();
  CHECK(m.buffers()[0] == 0);
  CHECK(m.buffers()[4] == 1);
  m.calibrate(x);
  m.calibrate(y);
  for (int f = 0; f < 4; ++f) {
    auto [mx, vx] = stats(x, f);
    auto [my, vy] = stats(y, f);
    CHECK(m.buffers()[f] == Approx((mx + my) / 2).epsilon(1e-5));
    CHECK(m.buffers()[4 + f] == Approx((vx + vy) / 2).epsilon(1e-5));
  }
  // Inference then normalizes with them.
  const auto& out = m.forward(y);
  CHECK(out(0, 0)
        == Approx((y(0, 0) - m.buffers()[0]) / std::sqrt(m.buffers()[4] + 1e-5))
               .epsilon(1e-4));
}

TEST_CASE("torchscript: files that are not modules are refused naming them") {
  auto none = (work_dir() / "none.pt").string();
  CHECK_THROWS_WITH(model_description(described(none)),
                    "layer 1 (torchscript): " + none + ": no such file");
  CHECK_THROWS_WITH(read_model_description("torchscript:" + none),
                    "torchscript:" + none + ": no such file");
  CHECK_THROWS_WITH(torchscript_layer<float>(none), none + ": no such file");
  auto text = (work_dir() / "text.pt").string();
  std::ofstream{text} << "not a module";
  CHECK_THROWS_WITH(model_description(described(text)),
                    Catch::StartsWith("layer 1 (torchscript): " + text
                                      + ": not a TorchScript module saved "
                                        "with torch.jit.save ("));
  CHECK_THROWS_WITH(
      model_description(R"({"layers": [{"type": "torchscript"}]})"),
      Catch::Contains("needs \"file\""));
  // A module that returns two tensors.
  torch::jit::Module pair{"Pair"};
  pair.define(R"(
def forward(self, x):
    return x, x
)");
  auto two = save(pair, "pair");
  CHECK_THROWS_WITH(build_model<float>(described(two), shape{3, 1, 1}, 3),
                    Catch::Contains(two + ": forward must return one tensor"));
  // A description file names its module relative to itself.
  torch::jit::Module id{"Identity"};
  id.define(R"(
def forward(self, x):
    return x * 1.0
)");
  save(id, "identity");
  auto json = (work_dir() / "net.json").string();
  std::ofstream{json} << R"({"layers": [{"type": "torchscript",
                                          "file": "identity.pt"}]})";
  auto d = nlohmann::json::parse(read_model_description(json));
  CHECK(d["layers"][0]["file"] == (work_dir() / "identity.pt").string());
  CHECK(d["name"] == "net");
  d = nlohmann::json::parse(read_model_description(
      "torchscript:" + (work_dir() / "identity.pt").string()));
  CHECK(d["name"] == "identity");
  CHECK(names_model_file("torchscript:identity.pt"));
}

#endif // TROUPE_HAVE_TORCH
