// Models out and in on the command line: troupe train --save (and --report)
// writes the final model, troupe eval reports the run's own final test
// accuracy from it, --init starts a run from it, troupe predict agrees with
// eval, and every mistake is refused naming the file or the flag.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <catch2/catch.hpp>

#include "apps/model_commands.hpp"
#include "apps/train_command.hpp"
#include "capture.hpp"
#include "optim/model_file.hpp"
#include "optim/param_hash.hpp"
#include "optim/rng.hpp"

namespace fs = std::filesystem;
using troupe::test::run_result;

namespace {

template <class F>
run_result capture(F body, const std::string& in = {}) {
  std::ostringstream out, err;
  std::istringstream input{in};
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  auto* old_in = std::cin.rdbuf(input.rdbuf());
  int status = body();
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  std::cin.rdbuf(old_in);
  return {status, out.str(), err.str()};
}

run_result train(std::vector<std::string> args) {
  return troupe::test::run_train_main(std::move(args));
}

run_result eval(std::vector<std::string> args) {
  return capture([&] { return troupe::apps::eval_main(args); });
}

run_result predict(std::vector<std::string> args, const std::string& in = {}) {
  return capture([&] { return troupe::apps::predict_main(args); }, in);
}

nlohmann::json last_json(const std::string& out) {
  auto pos = out.rfind("\n{");
  return nlohmann::json::parse(out.substr(pos == std::string::npos ? 0 : pos));
}

std::string dir() {
  static auto d = [] {
    auto p = fs::path{TROUPE_BINARY_DIR} / "model_cli_test";
    fs::remove_all(p);
    fs::create_directories(p);
    return p.string();
  }();
  return d;
}

std::vector<std::string> quick(const std::string& seed,
                               std::initializer_list<std::string> more) {
  std::vector<std::string> args{"--model=mlp",           "--max-steps=40",
                                "--progress=none",       "--json",
                                "--train-examples=2048", "--seed=" + seed};
  args.insert(args.end(), more);
  return args;
}

} // namespace

TEST_CASE("troupe eval of a saved model reports the run's final accuracy") {
  const std::string algo = GENERATE("sgd", "downpour");
  std::cout << "algo " << algo << ", seed 3" << std::endl;
  auto file = dir() + "/" + algo + ".safetensors";
  auto report = dir() + "/" + algo + "-report";
  std::vector<std::string> extra{"--algo=" + algo, "--save=" + file};
  if (algo != "sgd")
    extra = {"--algo=" + algo, "--save=" + file, "--workers=2",
             "--report=" + report};
  auto args = quick("3", {});
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = train(args);
  REQUIRE(r.status == 0);
  auto run = last_json(r.out);
  CHECK(run["saved_model"][0] == file);
  auto e = eval({"--model=" + file});
  INFO(e.err);
  REQUIRE(e.status == 0);
  auto j = last_json(e.out);
  CHECK(j["test_accuracy"] == run["test_accuracy"]);
  CHECK(j["test_loss"] == run["test_loss"]);
  CHECK(j["examples"] == 10000);
  CHECK(j["architecture"] == "mlp");
  CHECK_THAT(e.err, Catch::Contains("troupe eval: mlp from " + file));
  if (algo == "sgd") {
    CHECK(j["param_hash"] == run["param_hash"]);
  } else {
    // --report holds the same model.
    auto a = troupe::optim::read_model_file(file);
    auto b = troupe::optim::read_model_file(report + "/model.safetensors");
    CHECK(a == b);
  }
}

TEST_CASE("--init starts a run from a saved model") {
  std::cout << "seed 4" << std::endl;
  auto file = dir() + "/init.safetensors";
  REQUIRE(train(quick("4", {"--save=" + file})).status == 0);
  auto saved = last_json(eval({"--model=" + file}).out);
  // A step too small to move any weight: the first evaluation is the saved
  // model's.
  auto r = train({"--model=mlp", "--init=" + file, "--lr=1e-30",
                  "--max-steps=1", "--progress=none", "--json",
                  "--train-examples=2048", "--optimizer=sgd", "--seed=9"});
  REQUIRE(r.status == 0);
  auto j = last_json(r.out);
  CHECK(j["evaluations"][0]["test_accuracy"] == saved["test_accuracy"]);
  CHECK(j["param_hash"] == saved["param_hash"]);
  // A model of another architecture, a missing file and a broken one.
  r = train({"--model=logreg", "--init=" + file, "--progress=none"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err,
             Catch::Contains("--init=" + file
                             + " holds a mlp model, not --model=logreg"));
  r = train({"--init=" + dir() + "/none", "--progress=none"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains(dir() + "/none: no such file"));
  auto bytes = troupe::optim::read_model_file(file);
  auto cut = dir() + "/cut.safetensors";
  std::ofstream{cut, std::ios::binary}.write(
      bytes.data(), static_cast<std::streamsize>(bytes.size() - 20));
  r = train({"--init=" + cut, "--progress=none", "--max-steps=1"});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains(cut + ": truncated: tensor '4.bias'"));
  r = train(quick("4", {"--save=" + dir() + "/no/such/m.safetensors"}));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--save=" + dir() + "/no/such"));
}

TEST_CASE("troupe predict agrees with troupe eval") {
  std::cout << "seed 5" << std::endl;
  auto file = dir() + "/predict.safetensors";
  REQUIRE(train(quick("5", {"--save=" + file})).status == 0);
  auto e = last_json(eval({"--model=" + file}).out);
  std::string images = troupe::optim::fashion_mnist_dir;
  auto p = predict(
      {"--model=" + file, "--input=" + images + "/t10k-images-idx3-ubyte.gz"});
  REQUIRE(p.status == 0);
  auto labels = troupe::optim::read_idx(images + "/t10k-images-idx3-ubyte.gz",
                                        images + "/t10k-labels-idx1-ubyte.gz")
                    .labels;
  std::istringstream lines{p.out};
  std::size_t index, cls, n = 0, correct = 0;
  double prob;
  while (lines >> index >> cls >> prob) {
    REQUIRE(index == n);
    CHECK((prob > 0 && prob <= 1));
    correct += static_cast<int>(cls) == labels[n] ? 1 : 0;
    ++n;
  }
  CHECK(n == 10000);
  CHECK(static_cast<double>(correct) / 10000.0
        == Approx(e["test_accuracy"].get<double>()).epsilon(0));
  // libsvm on standard input, top 3 as JSON lines.
  std::string svm = "0 1:0.5 300:1\n0 784:0.25\n";
  p = predict({"--model=" + file, "--input=-", "--top=3", "--json"}, svm);
  REQUIRE(p.status == 0);
  std::istringstream json_lines{p.out};
  std::string line;
  int count = 0;
  while (std::getline(json_lines, line)) {
    auto j = nlohmann::json::parse(line);
    CHECK(j["index"] == count++);
    REQUIRE(j["top"].size() == 3);
    CHECK(j["top"][0]["probability"] >= j["top"][1]["probability"]);
  }
  CHECK(count == 2);
}

TEST_CASE("eval and predict refuse mistakes naming them") {
  auto r = eval({});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--model=FILE is required"));
  r = eval({"--model=" + dir() + "/none"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains(dir() + "/none: no such file"));
  auto junk = dir() + "/junk.safetensors";
  std::ofstream{junk} << "not a model at all";
  r = eval({"--model=" + junk});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains(junk + ": header length"));
  r = eval({"--modle=x"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("unknown option --modle"));
  auto file = dir() + "/logreg.safetensors";
  auto m = troupe::optim::make_model<float>("logreg", {1, 28, 28}, 10);
  troupe::optim::model_info info;
  info.model = "logreg";
  troupe::optim::save_model(file, m, info);
  r = eval({"--model=" + file, "--data=synthetic-logreg"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("has samples of shape"));
  r = predict({"--model=" + file});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--input=FILE is required"));
  r = predict({"--model=" + file, "--input=" + dir() + "/none"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains(dir() + "/none: no such file"));
  r = predict({"--model=" + file, "--input=-", "--top=11"}, "0 1:1\n");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--top must be in 1..10"));
  r = predict({"--model=" + file, "--input=-"}, "0 785:1\n");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains("standard input")
                        && Catch::Contains("index 785 exceeds"));
}

TEST_CASE(
    "--model=FILE.json trains a description and the saved model keeps it") {
  std::cout << "a model description, seed 5" << std::endl;
  auto desc = dir() + "/gelu-net.json";
  std::ofstream{desc} << R"({"layers": [
      {"type": "dense", "units": 64}, {"type": "gelu"},
      {"type": "dense", "units": 32}, {"type": "tanh"},
      {"type": "dense", "units": "classes"}]})";
  auto file = dir() + "/gelu-net.safetensors";
  for (std::string algo : {"sgd", "downpour"}) {
    INFO("--algo=" << algo);
    auto args = quick("5", {"--model=" + desc, "--algo=" + algo,
                            "--save=" + file, "--max-steps=60"});
    if (algo != "sgd")
      args.push_back("--workers=2");
    auto r = train(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    auto run = last_json(r.out);
    CHECK(run["model"] == "gelu-net");
    CHECK(run["model_description"]["layers"][1]["type"] == "gelu");
    CHECK(run["test_accuracy"].get<double>() > 0.5);
    // The saved model holds the description: eval rebuilds it.
    auto e = eval({"--model=" + file});
    INFO(e.err);
    REQUIRE(e.status == 0);
    auto j = last_json(e.out);
    CHECK(j["architecture"] == "gelu-net");
    CHECK(j["test_accuracy"] == run["test_accuracy"]);
  }
  // --init from it takes the same layers, not another model.
  auto warm = train(quick("5", {"--model=" + desc, "--init=" + file}));
  CHECK(warm.status == 0);
  auto wrong = train(quick("5", {"--model=mlp", "--init=" + file}));
  CHECK(wrong.status == 2);
  CHECK_THAT(wrong.err, Catch::Contains("holds a gelu-net model, not "
                                        "--model=mlp (their layers differ)"));
  // A broken description is refused naming the file and the layer.
  auto bad = dir() + "/bad.json";
  std::ofstream{bad} << R"({"layers": [{"type": "dense", "units": "many"}]})";
  auto r = train(quick("5", {"--model=" + bad}));
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("troupe train: --model=" + bad
                                    + ": layer 1 (dense): units must be"));
}

TEST_CASE("batch norm, dropout and residual blocks train under every kind "
          "of algorithm; the saved model holds their buffers") {
  std::cout << "layers of [13], seed 6" << std::endl;
  auto desc = dir() + "/bn-net.json";
  std::ofstream{desc} << R"({"layers": [
      {"type": "dense", "units": 64}, {"type": "batch_norm"},
      {"type": "relu"},
      {"type": "residual", "layers": [
        {"type": "dense", "units": 64}, {"type": "batch_norm"},
        {"type": "relu"}, {"type": "dropout", "p": 0.2}]},
      {"type": "dense", "units": "classes"}]})";
  for (std::string algo : {"sgd", "downpour", "easgd"}) {
    INFO("--algo=" << algo);
    auto file = dir() + "/bn-net-" + algo + ".safetensors";
    auto args = quick("6", {"--model=" + desc, "--algo=" + algo,
                            "--save=" + file, "--max-steps=80"});
    if (algo != "sgd")
      args.push_back("--workers=2");
    auto r = train(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    auto run = last_json(r.out);
    CHECK(run["test_accuracy"].get<double>() > 0.6);
    // The buffers were estimated for the final parameters and saved: eval
    // with them gives the run's own final figures.
    auto e = eval({"--model=" + file});
    INFO(e.err);
    REQUIRE(e.status == 0);
    auto j = last_json(e.out);
    CHECK(j["test_accuracy"] == run["test_accuracy"]);
    CHECK(j["test_loss"] == run["test_loss"]);
    auto loaded = troupe::optim::load_model(file);
    REQUIRE(loaded.model.buffer_size() == 256);
    // Not the initial (0, 1): estimated from data.
    CHECK(loaded.model.buffers()[0] != 0.0f);
  }
  // Sandblaster's full-batch objective needs a deterministic model.
  auto lbfgs = train(quick("6", {"--model=" + desc, "--algo=lbfgs"}));
  CHECK(lbfgs.status == 2);
  CHECK_THAT(lbfgs.err, Catch::Contains("dropout, batch_norm or another loss"));
}

TEST_CASE("a regression model (mse) learns numeric targets; R^2 reported") {
  std::cout << "mse regression, seed 7" << std::endl;
  // y = 2 x1 - x2 + 0.5 + noise, in libsvm form (float labels: targets).
  auto data = dir() + "/line.libsvm";
  {
    troupe::optim::rng gen{7};
    std::ofstream out{data};
    for (int i = 0; i < 2000; ++i) {
      double x1 = gen.uniform(-1, 1), x2 = gen.uniform(-1, 1);
      out << 2 * x1 - x2 + 0.5 + 0.05 * gen.normal() + 0.001 << " 1:" << x1
          << " 2:" << x2 << "\n";
    }
  }
  auto desc = dir() + "/line.json";
  std::ofstream{desc} << R"({"loss": "mse", "layers": [
      {"type": "dense", "units": "classes"}]})";
  auto file = dir() + "/line.safetensors";
  for (std::string algo : {"sgd", "downpour"}) {
    INFO("--algo=" << algo);
    std::vector<std::string> args{
        "--model=" + desc, "--data=" + data, "--algo=" + algo,
        "--epochs=4",      "--lr=0.05",      "--progress=none",
        "--json",          "--seed=7",       "--save=" + file};
    if (algo != "sgd")
      args.push_back("--workers=2");
    auto r = train(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    auto run = last_json(r.out);
    // The noise's share of the variance (~0.0025 of ~1.67) bounds R^2.
    CHECK(run["test_accuracy"].get<double>() > 0.99);
    CHECK(run["test_loss"].get<double>() < 0.01);
    auto e = eval({"--model=" + file, "--data=" + data});
    INFO(e.err);
    REQUIRE(e.status == 0);
    CHECK(last_json(e.out)["test_accuracy"] == run["test_accuracy"]);
  }
  // A classifier on regression targets is refused naming the loss.
  auto r = train({"--model=mlp", "--data=" + data, "--progress=none"});
  CHECK(r.status != 0);
  CHECK_THAT(r.err, Catch::Contains("use \"loss\": \"mse\""));
}
