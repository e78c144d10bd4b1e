// CSV data on the command line: troupe train --data=FILE.csv with
// --label-column trains on every column but the label's, each standardized
// on its own; troupe eval repeats the run's final accuracy from the saved
// model alone (the label column and the per-feature scaling travel in it);
// a node builds the job from the spec with the same data; mistakes are
// refused naming the flag, or the file and the line.

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <catch2/catch.hpp>

#include "apps/cluster_train.hpp"
#include "apps/data_source.hpp"
#include "apps/model_commands.hpp"
#include "apps/train_command.hpp"
#include "capture.hpp"
#include "optim/rng.hpp"

namespace fs = std::filesystem;
using troupe::test::run_result;

namespace {

nlohmann::json last_json(const std::string& out) {
  auto pos = out.rfind("\n{");
  return nlohmann::json::parse(out.substr(pos == std::string::npos ? 0 : pos));
}

std::string dir() {
  static auto d = [] {
    auto p = fs::path{TROUPE_BINARY_DIR} / "csv_cli_test";
    fs::remove_all(p);
    fs::create_directories(p);
    return p.string();
  }();
  return d;
}

/// 400 examples of two classes (coded 2 and 4, in the middle column
/// "diagnosis") told apart by two features of unrelated scales, and a noise
/// column last (which the default rule would take for the label).
std::string tabular_csv(std::uint64_t seed) {
  std::cout << "data seed " << seed << std::endl;
  troupe::optim::rng gen{seed};
  auto path = dir() + "/tumours.csv";
  std::ofstream out{path};
  out << "area, diagnosis, smoothness, texture\r\n";
  out.precision(7);
  for (int i = 0; i < 400; ++i) {
    bool bad = gen.uniform() < 0.4;
    double sign = bad ? 1 : -1;
    out << 1000 + 180 * sign + 150 * gen.normal() << ", " << (bad ? 4 : 2)
        << ", " << 0.1 + 0.012 * sign + 0.008 * gen.normal() << ", "
        << 20 + 4 * gen.normal() << "\r\n";
  }
  REQUIRE(out.good());
  return path;
}

template <class F>
run_result capture(F body) {
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  int status = body();
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  return {status, out.str(), err.str()};
}

run_result eval(std::vector<std::string> args) {
  return capture([&] { return troupe::apps::eval_main(args); });
}

} // namespace

TEST_CASE("troupe train on a CSV file, and troupe eval of its model") {
  auto csv = tabular_csv(5);
  auto model = dir() + "/tumours.safetensors";
  auto r = troupe::test::run_train_main(
      {"--data=" + csv, "--label-column=diagnosis", "--model=logreg",
       "--epochs=20", "--progress=none", "--json", "--seed=5",
       "--save=" + model});
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto j = last_json(r.out);
  CHECK(j["data"] == csv + "/train");
  CHECK(j["label_column"] == "diagnosis");
  // One mean and stddev per feature: area, smoothness, texture.
  REQUIRE(j["input_scaling"]["mean"].size() == 3);
  CHECK(j["input_scaling"]["mean"][0].get<double>() == Approx(1000).margin(60));
  CHECK(j["input_scaling"]["stddev"][1].get<double>()
        == Approx(0.014).margin(0.004));
  CHECK(j["test_accuracy"].get<double>() >= 0.9);
  // troupe eval finds the data, its label column and its scaling in the
  // model file, and repeats the run's figure.
  auto e = eval({"--model=" + model});
  INFO(e.err);
  REQUIRE(e.status == 0);
  auto ej = last_json(e.out);
  CHECK(ej["data"] == csv + "/test");
  CHECK(ej["examples"] == 40);
  CHECK(ej["test_accuracy"] == j["test_accuracy"]);
  // The same with --data given: the run's label column still applies.
  auto again = eval({"--model=" + model, "--data=" + csv});
  REQUIRE(again.status == 0);
  CHECK(last_json(again.out)["test_accuracy"] == j["test_accuracy"]);
}

TEST_CASE("a node builds a CSV job from the spec with the coordinator's data") {
  auto csv = tabular_csv(6);
  troupe::apps::train_options o;
  o.algo = "downpour";
  o.model = "logreg";
  o.data = csv;
  o.label_column = "diagnosis";
  o.workers = 2;
  o.lr = 0.02;
  o.epochs = 1;
  o.lr_decay = 0.5;
  o.lr_step_epochs = 1;
  o.eval_every = 1;
  troupe::apps::select_algorithm(o);
  auto spec = troupe::apps::to_spec(o);
  CHECK(nlohmann::json::parse(spec)["label_column"] == "diagnosis");
  CHECK(troupe::apps::from_spec(spec).label_column == "diagnosis");
  // The coordinator's own build (troupe train loads and scales, then
  // prepares the job) and a node's from the spec agree.
  auto data = troupe::apps::load_data(o.data, o.seed, o.label_column);
  troupe::apps::standardize_data(o.data, data);
  auto mine = troupe::apps::prepare_cluster_job(o, std::move(data));
  auto theirs = troupe::apps::build_from_spec(spec);
  CHECK(theirs.fingerprint == mine.fingerprint);
  // Without the label column the node would read other data.
  auto j = nlohmann::json::parse(spec);
  j["label_column"] = "texture";
  std::string other;
  try {
    other = troupe::apps::build_from_spec(j.dump()).fingerprint;
  } catch (const std::exception& e) {
    other = e.what();
  }
  CHECK(other != mine.fingerprint);
}

TEST_CASE("CSV mistakes are refused naming the flag, or the file and line") {
  auto csv = tabular_csv(7);
  auto quick = [](std::vector<std::string> args) {
    args.insert(args.end(),
                {"--model=logreg", "--max-steps=2", "--progress=none"});
    return troupe::test::run_train_main(args);
  };
  auto r = quick({"--data=synthetic-logreg", "--label-column=diagnosis"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--label-column=diagnosis names a column "
                                    "of CSV data"));
  r = quick({"--data=" + csv, "--label-column=nope"});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains(csv
                                    + ":1: no label column 'nope' in the "
                                      "header (its columns: 'area', "
                                      "'diagnosis', 'smoothness', "
                                      "'texture')"));
  auto bad = dir() + "/bad.csv.gz";
  {
    std::ofstream out{dir() + "/bad.csv"};
    out << "a,b,label\n1,2,0\n1,x,1\n";
  }
  r = quick({"--data=" + dir() + "/bad.csv"});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains(dir()
                                    + "/bad.csv:3: column 'b' holds "
                                      "'x', not a number"));
  r = quick({"--data=" + bad});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Contains(bad + ": cannot open"));
  CHECK(troupe::apps::is_csv_spec("x/Data.CSV"));
  CHECK(troupe::apps::is_csv_spec("a.csv.gz"));
  CHECK_FALSE(troupe::apps::is_csv_spec(".csv"));
  CHECK_FALSE(troupe::apps::is_csv_spec("a.csvx"));
}
