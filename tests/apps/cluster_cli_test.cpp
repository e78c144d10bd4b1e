// troupe train --algo=downpour|sync: flags are checked by name, synchronous
// runs are reproducible, the JSON reports what the issue promises.

#include <iostream>
#include <sstream>

#include <catch2/catch.hpp>

#include "apps/train_command.hpp"
#include "capture.hpp"

using troupe::apps::run_train;
using troupe::apps::train_main;
using troupe::apps::train_options;

namespace {

troupe::test::run_result run(std::vector<std::string> args) {
  return troupe::test::run_train_main(std::move(args));
}

train_options quick(const std::string& algo, std::uint64_t workers) {
  train_options o;
  o.algo = algo;
  o.model = "mlp";
  o.workers = workers;
  o.shards = 2;
  o.train_examples = 4096;
  o.max_steps = 40;
  o.progress = "none";
  return o;
}

} // namespace

TEST_CASE("cluster flags that do not fit are refused by name") {
  struct bad {
    std::vector<std::string> args;
    const char* names;
  };
  for (auto& b : std::vector<bad>{
           {{"--algo=sync", "--n-fetch=2"}, "--n-fetch"},
           {{"--algo=sync", "--warm-start-steps=5"}, "--warm-start-steps"},
           {{"--algo=downpour", "--shards=0"}, "--shards"},
           {{"--algo=downpour", "--workers=0"}, "--workers"},
           {{"--algo=downpour", "--staleness-bound=2", "--n-push=3"},
            "--n-push"},
           {{"--algo=downpour", "--staleness-bound=-5"}, "--staleness-bound"},
           {{"--algo=downpour", "--server-optimizer=lbfgs"}, "lbfgs"},
           {{"--algo=sgd", "--workers=2"}, "--workers"},
           {{"--algo=sgd", "--report=/tmp/r"}, "--report"},
           {{"--algo=downpour", "--report=/proc/no/dir"}, "--report"},
           {{"--algo=sgd", "--monitor=127.0.0.1:0"}, "--monitor"},
           {{"--algo=downpour", "--monitor=nohost"}, "--monitor"},
           // Distributed jobs.
           {{"--algo=sgd", "--listen=127.0.0.1:0", "--expect=1"}, "--listen"},
           {{"--algo=downpour", "--listen=127.0.0.1:0"}, "--expect"},
           {{"--algo=downpour", "--expect=2"}, "--listen"},
           {{"--algo=downpour", "--listen=nohost", "--expect=1"}, "--listen"},
           {{"--algo=downpour", "--listen=h:99999", "--expect=1"}, "65535"},
           {{"--algo=downpour", "--listen=h:1", "--expect=1",
             "--tls-cert=/nonexistent.pem"},
            "private key"},
           {{"--algo=downpour", "--listen=h:1", "--expect=1", "--heartbeat=1",
             "--node-timeout=1"},
            "--node-timeout"},
           {{"--algo=downpour", "--listen=h:1", "--expect=1",
             "--token-file=/nonexistent"},
            "/nonexistent"},
           {{"--algo=downpour", "--listen=h:1", "--expect=1", "--token=a",
             "--token-file=/etc/hostname"},
            "--token-file"},
       }) {
    auto args = b.args;
    args.push_back("--progress=none");
    auto r = run(args);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(b.names));
  }
}

TEST_CASE("sync: the same seed gives the same parameters") {
  auto o = quick("sync", 3);
  std::cout << "sync reproducibility: seed " << o.seed << std::endl;
  auto a = run_train(o);
  auto b = run_train(o);
  CHECK(a["param_hash"] == b["param_hash"]);
  CHECK(a["steps"] == 3 * 40);
  CHECK(a["server_updates"] == 2 * 40); // 2 shards, one update per step
  o.seed = 2;
  CHECK(run_train(o)["param_hash"] != a["param_hash"]);
}

TEST_CASE("downpour reports staleness, traffic and an SSP bound") {
  auto o = quick("downpour", 3);
  o.staleness_bound = 1;
  o.max_steps = 60;
  std::cout << "downpour ssp: seed " << o.seed << std::endl;
  auto j = run_train(o);
  INFO(j.dump());
  CHECK_FALSE(j.contains("error"));
  CHECK(j["steps"] == 3 * 60);
  CHECK(j["max_clock_gap"].get<int>() <= 1);
  CHECK(j["messages"].get<double>() > 3 * 60 * 4); // 2 pushes, 2 fetches
  CHECK(j["bytes_sent"].get<double>() > 0);
  CHECK(j["staleness_histogram"].size() >= 1);
  CHECK(j["rejected_pushes"].empty());
  CHECK(j["worker_stats"].size() == 3);
}
