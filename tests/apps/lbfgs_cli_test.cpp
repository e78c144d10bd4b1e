// troupe train --algo=lbfgs (Sandblaster L-BFGS): flags that do not fit are
// refused by name; on LOGREG the run reaches the serial L-BFGS reference's
// objective (T1) for several shard, worker and portion counts, each portion
// counted once per pass (T2); the JSON reports the common fields.

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <catch2/catch.hpp>

#include "algos/sandblaster/sandblaster.hpp"
#include "apps/data_source.hpp"
#include "apps/driver_train.hpp"
#include "apps/train_command.hpp"
#include "capture.hpp"
#include "optim/batch_objective.hpp"
#include "optim/lbfgs.hpp"
#include "optim/sequential.hpp"

using namespace troupe;

TEST_CASE("lbfgs flags that do not fit are refused by name") {
  struct bad {
    std::vector<std::string> args;
    const char* names;
  };
  for (auto& b : std::vector<bad>{
           {{"--algo=lbfgs", "--lr=0.1"}, "--lr"},
           {{"--algo=lbfgs", "--optimizer=adam"}, "--optimizer"},
           {{"--algo=lbfgs", "--epochs=2"}, "--epochs"},
           {{"--algo=lbfgs", "--target-accuracy=0.8"}, "--target-accuracy"},
           {{"--algo=lbfgs", "--n-push=2"}, "--n-push"},
           {{"--algo=lbfgs", "--memory=0"}, "--memory"},
           {{"--algo=lbfgs", "--gradient-tolerance=-1"},
            "--gradient-tolerance"},
           {{"--algo=lbfgs", "--weight-decay=-0.5"}, "--weight-decay"},
           {{"--algo=lbfgs", "--compress=topk"}, "--compress"},
           {{"--algo=lbfgs", "--tau=3"}, "--tau"},
           {{"--algo=downpour", "--portions=8"}, "--portions"},
           {{"--algo=sync", "--memory=5"}, "--memory"},
           {{"--algo=lbfgs", "--data=synthetic-logreg", "--model=logreg",
             "--portions=100000"},
            "--portions"},
       }) {
    auto args = b.args;
    args.push_back("--progress=none");
    auto r = test::run_train_main(args);
    INFO(r.err);
    CHECK(r.status != 0);
    CHECK_THAT(r.err, Catch::Contains(b.names));
  }
}

TEST_CASE("lbfgs on LOGREG reaches the serial reference's objective for "
          "several shard, worker and portion counts (T1, T2)") {
  const std::uint64_t seed = 5;
  std::cout << "lbfgs cli: seed " << seed << std::endl;
  // The serial reference on the same data, point and objective.
  auto data = apps::load_data("synthetic-logreg", seed);
  optim::standardize(data);
  auto train = std::make_shared<const optim::dataset>(data.train);
  auto model
      = optim::make_model<float>("logreg", train->sample_shape, train->classes);
  model.init(seed);
  std::vector<double> x0(model.params(), model.params() + model.size());
  optim::batch_objective_options bo;
  bo.model = "logreg";
  bo.portions = 1;
  bo.l2 = algos::sandblaster::default_l2;
  optim::batch_objective whole{train, bo};
  optim::objective_fn f
      = [&](const std::vector<double>& x, std::vector<double>& g) {
          return whole.full(x, g);
        };
  optim::lbfgs_options lo;
  lo.memory = 10;
  lo.max_iterations = 40;
  lo.gradient_tolerance = 1e-6;
  auto serial = optim::lbfgs_minimize(f, x0, lo);
  std::cout << "  serial: f = " << serial.f << " after " << serial.iterations
            << " iterations" << std::endl;
  struct config {
    std::uint64_t shards, workers, portions;
  };
  for (auto c : {config{1, 1, 1}, config{2, 3, 7}, config{5, 4, 64}}) {
    apps::train_options o;
    o.algo = "lbfgs";
    o.model = "logreg";
    o.data = "synthetic-logreg";
    o.seed = seed;
    o.shards = c.shards;
    o.workers = c.workers;
    troupe::apps::algorithm_options<troupe::algos::sandblaster>(o).portions
        = c.portions;
    o.max_steps = 40;
    o.progress = "none";
    auto r = apps::run_train(o);
    INFO(r.dump().substr(0, 2000));
    REQUIRE_FALSE(r.contains("error"));
    auto obj = r["objective"].get<double>();
    std::cout << "  " << c.shards << " shards, " << c.workers << " workers, "
              << c.portions << " portions: f = " << obj << " after "
              << r["iterations"] << " iterations, " << r["passes"]
              << " passes, backups " << r["backups"] << std::endl;
    // Portion sums in a different order than one sum over the batch: the
    // same objective to double precision's rounding, the same iterations.
    CHECK(std::abs(obj - serial.f) <= 1e-9 * std::abs(serial.f));
    CHECK(r["iterations"].get<std::size_t>() == serial.iterations);
    CHECK(r["portions_counted"].get<std::uint64_t>()
          == r["passes"].get<std::uint64_t>() * c.portions);
    CHECK(r["test_accuracy"].get<double>() > 0.8);
    CHECK(r["trace"].size() == r["iterations"].get<std::size_t>() + 1);
    CHECK(r["algo"] == "lbfgs");
    CHECK(r["samples_per_sec"].get<double>() > 0);
  }
}

TEST_CASE("lbfgs without backups reaches the same point; a time limit "
          "stops it") {
  apps::train_options o;
  o.algo = "lbfgs";
  o.model = "logreg";
  o.data = "synthetic-logreg";
  o.workers = 3;
  o.shards = 2;
  troupe::apps::algorithm_options<troupe::algos::sandblaster>(o).portions = 9;
  o.max_steps = 15;
  o.progress = "none";
  auto with = apps::run_train(o);
  troupe::apps::algorithm_options<troupe::algos::sandblaster>(o).backups
      = false;
  auto without = apps::run_train(o);
  REQUIRE_FALSE(with.contains("error"));
  REQUIRE_FALSE(without.contains("error"));
  CHECK(without["backups"] == 0);
  CHECK(with["objective"].get<double>() == without["objective"].get<double>());
  // mlp on 2000 Fashion-MNIST examples takes far longer than a second.
  o.model = "mlp";
  o.data = "fashion-mnist";
  o.train_examples = 2000;
  o.max_steps = 100000;
  troupe::apps::algorithm_options<troupe::algos::sandblaster>(o)
      .gradient_tolerance
      = 0;
  o.max_seconds = 1;
  auto timed = apps::run_train(o);
  INFO(timed["stop_reason"]);
  CHECK(timed["stop_reason"] == "time limit reached");
  CHECK(timed["seconds"].get<double>() < 5);
}

TEST_CASE("lbfgs --report records the objective per iteration; --monitor "
          "serves while it runs") {
  namespace fs = std::filesystem;
  auto dir = fs::path{TROUPE_BINARY_DIR} / "lbfgs_report_test";
  fs::remove_all(dir);
  apps::train_options o;
  o.algo = "lbfgs";
  o.model = "logreg";
  o.data = "synthetic-logreg";
  o.workers = 2;
  o.shards = 2;
  o.max_steps = 8;
  o.progress = "none";
  o.report = dir.string();
  o.monitor = "127.0.0.1:0";
  auto r = apps::run_train(o);
  INFO(r.dump().substr(0, 2000));
  REQUIRE_FALSE(r.contains("error"));
  CHECK(r["report"] == dir.string());
  CHECK_THAT(r["monitor"].get<std::string>(),
             Catch::StartsWith("http://127.0.0.1:"));
  std::ifstream csv{dir / "train.csv"};
  REQUIRE(csv);
  std::string header, line;
  std::getline(csv, header);
  std::size_t rows = 0;
  while (std::getline(csv, line))
    ++rows;
  CHECK(rows >= 2);
  CHECK(fs::exists(dir / "result.json"));
  CHECK(fs::exists(dir / "curves.svg"));
  fs::remove_all(dir);
}
