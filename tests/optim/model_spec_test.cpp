// Models described as data (optim/model_spec.hpp): the built-ins are their
// descriptions, a description of the new layers builds and learns, and every
// mistake in a description is refused naming the layer and the problem.

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "optim/activation.hpp"
#include "optim/dataset.hpp"
#include "optim/loss.hpp"
#include "optim/model_spec.hpp"
#include "optim/rng.hpp"

using namespace troupe::optim;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> kinds(const sequential<float>& m) {
  std::vector<std::string> out;
  for (const auto& l : m.layers())
    out.push_back(l->kind());
  return out;
}

std::string refusal(const std::string& description, shape in = {1, 28, 28},
                    int classes = 10) {
  try {
    build_model<float>(description, in, classes);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(built)";
}

} // namespace

TEST_CASE("the built-in models are their descriptions") {
  using v = std::vector<std::string>;
  auto logreg = make_model<float>("logreg");
  CHECK(kinds(logreg) == v{"dense"});
  auto mlp = make_model<float>("mlp");
  CHECK(kinds(mlp) == v{"dense", "relu", "dense", "relu", "dense"});
  CHECK(mlp.size() == 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  auto lenet = make_model<float>("lenet", shape{1, 28, 28}, 10);
  CHECK(kinds(lenet)
        == v{"conv", "relu", "pool", "conv", "relu", "pool", "flatten", "dense",
             "relu", "dense", "relu", "dense"});
  CHECK(lenet.size() == 61706); // LeNet-5 as in PyTorch's tutorial
  // A built-in's description builds the same model, bit for bit after init.
  auto text = model_description("mlp");
  CHECK(is_model_description(text));
  CHECK(model_label(text) == "mlp");
  auto again = build_model<float>(text, shape{1, 28, 28}, 10);
  mlp.init(7);
  again.init(7);
  REQUIRE(again.size() == mlp.size());
  CHECK(std::equal(mlp.params(), mlp.params() + mlp.size(), again.params()));
  CHECK(same_architecture("mlp", text));
  CHECK(!same_architecture("mlp", "lenet"));
  // "classes" follows the data.
  CHECK(make_model<float>("logreg", shape{3, 4, 4}, 7).output_shape().size()
        == 7);
}

TEST_CASE("a description of the new layers builds and learns") {
  const std::string text = R"({"name": "small", "layers": [
      {"type": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1},
      {"type": "gelu"}, {"type": "avg_pool2d", "kernel": 2},
      {"type": "flatten"}, {"type": "dense", "units": 16}, {"type": "tanh"},
      {"type": "dense", "units": 12}, {"type": "sigmoid"},
      {"type": "dense", "units": "classes"}]})";
  auto m = build_model<float>(text, shape{1, 8, 8}, 3);
  CHECK(model_label(text) == "small");
  CHECK(kinds(m)
        == std::vector<std::string>{"conv", "gelu", "avgpool", "flatten",
                                    "dense", "tanh", "dense", "sigmoid",
                                    "dense"});
  // A fixed batch of 12 samples of 3 classes: 300 plain SGD steps fit it.
  const std::uint64_t seed = 11;
  INFO("seed " << seed);
  m.init(seed);
  rng gen{seed};
  matrix<float> x(64, 12);
  std::vector<std::int32_t> y(12);
  for (int j = 0; j < 12; ++j) {
    y[j] = j % 3;
    for (int i = 0; i < 64; ++i)
      x(i, j) = static_cast<float>(gen.uniform() + (i % 3 == y[j] ? 1.0 : 0));
  }
  float first = m.loss_and_gradient(x, y.data()), last = first;
  for (int step = 0; step < 300; ++step) {
    last = m.loss_and_gradient(x, y.data());
    for (std::size_t i = 0; i < m.size(); ++i)
      m.params()[i] -= 0.5f * m.grads()[i];
  }
  std::cout << "model_spec_test: loss " << first << " -> " << last << "\n";
  CHECK(last < first * 0.2f);
}

TEST_CASE("a description's mistakes are refused naming the layer") {
  struct bad_case {
    const char* text;
    const char* says;
  };
  for (const auto& bc :
       {bad_case{R"([1, 2])", "must be a JSON object"},
        bad_case{R"({"layers": []})", "non-empty list"},
        bad_case{R"({"layers": [{"type": "dense", "units": "classes"}],
                       "optimizer": "sgd"})",
                 "unknown key 'optimizer'"},
        bad_case{R"({"layers": [{"type": "dense"}]})",
                 "layer 1 (dense): needs \"units\""},
        bad_case{R"({"layers": [{"type": "relu"},
                       {"type": "dens", "units": 3}]})",
                 "layer 2: unknown type 'dens' (known: dense, conv2d"},
        bad_case{R"({"layers": [{"type": "dense", "unit": 10}]})",
                 "layer 1 (dense): unknown option 'unit' (it takes units)"},
        bad_case{R"({"layers": [{"type": "relu", "slope": 0.1}]})",
                 "layer 1 (relu): unknown option 'slope' (it takes none)"},
        bad_case{R"({"layers": [{"type": "conv2d", "out_channels": 4,
                       "kernel": 0}]})",
                 "layer 1 (conv2d): kernel must be an integer from 1 to 64"},
        bad_case{R"({"layers": [{"type": "conv2d", "out_channels": 4,
                       "kernel": 2.5}]})",
                 "kernel must be an integer"},
        bad_case{R"({"layers": [{"type": "dense", "units": -3}]})",
                 "units must be an integer from 1 to 1048576"},
        bad_case{R"({"layers": [{"type": "dense", "units": 7}]})",
                 "gives 7 values per sample, but the data has 10 classes"},
        bad_case{R"({"layers": [{"type": "max_pool2d", "kernel": 64}]})",
                 "pool1: input {1, 28, 28} is smaller than the 64x64"},
        bad_case{R"({"layers": [{"type": "conv2d", "out_channels": 4096,
                       "kernel": 1, "padding": 64}]})",
                 "conv1: gives {4096, 156, 156}"},
        bad_case{R"({"layers": [{"type": "dense", "units": 1048576},
                       {"type": "dense", "units": 1048576}]})",
                 "parameters; at most 1073741824"},
        bad_case{R"({"name": "a/b", "layers": [{"type": "relu"}]})",
                 "\"name\" must be a short string"},
        bad_case{"{\"layers\": [", "not valid JSON"},
        bad_case{R"({"layers": [{"type": "dropout", "p": 1}]})",
                 "layer 1 (dropout): p must be a number in [0, 1), not '1'"},
        bad_case{R"({"layers": [{"type": "dropout"}]})",
                 "layer 1 (dropout): needs \"p\""},
        bad_case{R"({"layers": [{"type": "batch_norm", "eps": 0}]})",
                 "layer 1 (batch_norm): eps must be a number above"},
        bad_case{R"({"layers": [{"type": "embedding", "dim": 4}]})",
                 "layer 1 (embedding): needs \"vocabulary\""},
        bad_case{R"({"layers": [{"type": "residual", "layers": []}]})",
                 "layer 1 (residual): \"layers\" must be a non-empty list"},
        bad_case{R"({"layers": [{"type": "residual", "layers": [
                       {"type": "relu"}, {"type": "conv2d", "kernel": 3}]}]})",
                 "layer 1 (residual), layer 2 (conv2d): needs "
                 "\"out_channels\""},
        bad_case{R"({"loss": "hinge", "layers": [{"type": "relu"}]})",
                 "unknown loss \"hinge\" (known: cross_entropy, "
                 "binary_cross_entropy, mse)"},
        bad_case{R"({"loss": "binary_cross_entropy",
                     "layers": [{"type": "dense", "units": "classes"}]})",
                 "binary_cross_entropy, which needs 2 classes (labels 0 and "
                 "1), but the data has 10"},
        bad_case{"resnet50", "unknown model 'resnet50' (known: logreg, "
                             "mlp, lenet, a description FILE.json or "
                             "torchscript:FILE.pt)"}}) {
    INFO(bc.text);
    CHECK_THAT(refusal(bc.text), Catch::Contains(bc.says));
  }
  // Too many layers, too long a text.
  nlohmann::json many{{"layers", nlohmann::json::array()}};
  for (int i = 0; i < 300; ++i)
    many["layers"].push_back({{"type", "relu"}});
  CHECK_THAT(refusal(many.dump()), Catch::Contains("at most 256"));
  // Blocks nest at most 8 deep, and their layers count.
  nlohmann::json deep{{"type", "relu"}};
  for (int i = 0; i < 9; ++i)
    deep = {{"type", "residual"}, {"layers", {deep}}};
  CHECK_THAT(refusal(nlohmann::json{{"layers", {deep}}}.dump()),
             Catch::Contains("residual blocks nest at most 8 deep"));
  nlohmann::json wide{{"type", "residual"}, {"layers", many["layers"]}};
  CHECK_THAT(refusal(nlohmann::json{{"layers", {wide}}}.dump()),
             Catch::Contains("too many layers: at most 256"));
  CHECK_THAT(refusal("{" + std::string(2 << 20, ' ') + "}"),
             Catch::Contains("at most 1048576"));
}

TEST_CASE("a description file: named after it, refused naming it") {
  auto dir = fs::path{TROUPE_BINARY_DIR} / "model_spec_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto path = (dir / "tiny net.json").string();
  std::ofstream{path} << R"({"layers": [{"type": "flatten"},
                            {"type": "dense", "units": "classes"}]})";
  CHECK(names_model_file(path));
  CHECK(!names_model_file("mlp"));
  auto text = read_model_description(path);
  CHECK(model_label(text) == "tiny net");
  CHECK(text == model_description(text)); // canonical
  auto bad = (dir / "bad.json").string();
  std::ofstream{bad} << R"({"layers": [{"type": "dense", "units": 0}]})";
  CHECK_THROWS_WITH(read_model_description(bad),
                    Catch::StartsWith(bad + ": layer 1 (dense): units"));
  CHECK_THROWS_WITH(read_model_description((dir / "none.json").string()),
                    Catch::Contains("none.json: no such model description"));
}
