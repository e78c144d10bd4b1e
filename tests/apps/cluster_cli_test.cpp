// troupe train --algo=downpour|sync: flags are checked by name, synchronous
// runs are reproducible, the JSON reports what the issue promises.

#include <iostream>
#include <sstream>

#include <catch2/catch.hpp>

#include "algos/downpour/downpour.hpp"
#include "algos/easgd/easgd.hpp"
#include "algos/lsgd/lsgd.hpp"
#include "algos/sgp/sgp.hpp"
#include "algos/shadow/shadow.hpp"
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
           {{"--algo=sgd", "--report=/proc/no/dir"}, "--report"},
           {{"--algo=downpour", "--report=/proc/no/dir"}, "--report"},
           {{"--algo=sgd", "--monitor=nohost"}, "--monitor"},
           {{"--algo=downpour", "--monitor=nohost"}, "--monitor"},
           // Byzantine-robust rules and attacks (issue [15]).
           {{"--algo=sync", "--aggregation=mode"}, "known: mean"},
           {{"--algo=sync", "--workers=6", "--aggregation=krum", "--agg-f=2"},
            "more than 6 workers"},
           {{"--algo=sync", "--workers=4", "--aggregation=trimmed_mean",
             "--agg-f=2"},
            "--agg-f=2"},
           {{"--algo=sync", "--aggregation=median", "--agg-f=1"}, "--agg-f"},
           {{"--algo=sync", "--aggregation=krum", "--agg-m=2"}, "--agg-m"},
           {{"--algo=sync", "--aggregation=cclip", "--agg-clip-radius=0"},
            "--agg-clip-radius"},
           {{"--algo=sync", "--agg-clip-iterations=4"}, "cclip"},
           {{"--algo=easgd", "--aggregation=median"}, "--aggregation"},
           {{"--algo=downpour", "--aggregation=median", "--staleness-bound=1"},
            "--staleness-bound"},
           {{"--algo=downpour", "--agg-buffer=2"}, "--agg-buffer"},
           {{"--algo=downpour", "--workers=2", "--aggregation=median",
             "--agg-buffer=3"},
            "--agg-buffer=3"},
           {{"--algo=downpour", "--aggregation=cge", "--agg-deadline=0"},
            "--agg-deadline"},
           {{"--algo=sync", "--workers=3", "--byzantine=3"}, "--byzantine"},
           {{"--algo=sync", "--workers=3", "--byzantine=1", "--attack=flip"},
            "sign_flip"},
           {{"--algo=sync", "--attack=alie"}, "--byzantine"},
           {{"--algo=sync", "--workers=3", "--byzantine=1", "--attack=gaussian",
             "--attack-sigma=-1"},
            "--attack-sigma"},
           {{"--algo=sgd", "--byzantine=1"}, "--byzantine"},
           // Robust mixing in gossip.
           {{"--algo=sgp", "--aggregation=median"}, "--algo=dssync"},
           {{"--algo=sgp", "--aggregation=cclip", "--compress=topk"},
            "--compress"},
           {{"--algo=sgp", "--aggregation=cclip", "--agg-clip-iterations=2"},
            "--agg-clip-iterations"},
           {{"--algo=sgp", "--aggregation=cclip", "--agg-f=1"}, "--agg-f"},
           {{"--algo=dssync", "--group-size=4", "--aggregation=krum",
             "--agg-f=1"},
            "group members"},
           {{"--algo=dssync", "--aggregation=cclip", "--agg-clip-radius=-1"},
            "--agg-clip-radius"},
           // Consensus algorithms.
           {{"--algo=downpour", "--tau=8"}, "--tau"},
           {{"--algo=easgd", "--workers=4", "--alpha=0.3"}, "beta"},
           {{"--algo=easgd", "--alpha=1.5"}, "--alpha"},
           {{"--algo=easgd", "--easgd-momentum=1"}, "--easgd-momentum"},
           {{"--algo=easgd", "--tau=0"}, "--tau"},
           {{"--algo=easgd", "--groups=2"}, "--groups"},
           {{"--algo=easgd", "--n-fetch=2"}, "--n-fetch"},
           {{"--algo=lsgd", "--shards=2"}, "--shards"},
           {{"--algo=lsgd", "--workers=2", "--groups=3"}, "--groups"},
           {{"--algo=lsgd", "--lambda=1.5"}, "--lambda"},
           {{"--algo=lsgd", "--tau=8", "--tau-g=4"}, "--tau-g"},
           {{"--algo=lsgd", "--alpha=0.1"}, "--alpha"},
           // Decentralized algorithms.
           {{"--algo=sgp", "--shards=2"}, "--shards"},
           {{"--algo=sgp", "--peers=3"}, "--peers"},
           {{"--algo=downpour", "--peers=2"}, "--peers"},
           {{"--algo=dssync", "--overlap=1"}, "--overlap"},
           {{"--algo=dssync", "--group-size=1"}, "--group-size"},
           {{"--algo=sgp", "--group-size=4"}, "--group-size"},
           {{"--algo=sgp", "--groups=2"}, "--groups"},
           {{"--algo=shadow", "--shadow=allreduce"}, "--shadow"},
           {{"--algo=shadow", "--shards=2"}, "--shards"},
           {{"--algo=shadow", "--shadow=ma", "--block-lr=2"}, "--block-lr"},
           {{"--algo=shadow", "--shadow=bmuf", "--block-momentum=1"},
            "--block-momentum"},
           {{"--algo=shadow", "--shadow-period=-1"}, "--shadow-period"},
           {{"--algo=shadow", "--workers=2", "--groups=3"}, "--groups"},
           {{"--algo=sgp", "--alpha=0.1"}, "--alpha"},
           {{"--algo=dssync", "--n-fetch=2"}, "--n-fetch"},
           {{"--algo=easgd", "--shadow=ma", "--shadow-period=1"},
            "--shadow-period"},
           // Compression.
           {{"--algo=downpour", "--compress=gzip"}, "--compress"},
           {{"--algo=lsgd", "--compress=topk"}, "--compress"},
           {{"--algo=downpour", "--compress=topk", "--bin-fc=64"}, "--bin-fc"},
           {{"--algo=downpour", "--compress=adacomp", "--topk-fc=0.1"},
            "--topk-fc"},
           {{"--algo=downpour", "--compress=topk", "--topk-conv=2"},
            "--topk-conv"},
           {{"--algo=downpour", "--compress=adacomp", "--bin-conv=0"},
            "--bin-conv"},
           {{"--algo=sgp", "--gossip-gamma=0.2"}, "--gossip-gamma"},
           {{"--algo=sgp", "--compress=topk", "--gossip-gamma=0"},
            "--gossip-gamma"},
           // Hot shard replicas: downpour without a bound and EASGD only.
           {{"--algo=downpour", "--shard-replicas=2"}, "--shard-replicas=2"},
           {{"--algo=sync", "--shard-replicas=1"}, "rounds"},
           {{"--algo=downpour", "--staleness-bound=1", "--shard-replicas=1"},
            "staleness bound"},
           {{"--algo=shadow", "--shadow=easgd", "--shards=1",
             "--shard-replicas=1"},
            "--algo=shadow"},
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
  troupe::apps::algorithm_options<troupe::algos::downpour>(o).staleness_bound
      = 1;
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

TEST_CASE("lsgd: groups elect leaders, workers pull, the JSON reports it") {
  auto o = quick("lsgd", 4);
  o.shards = 1; // the default; lsgd runs without shards
  troupe::apps::algorithm_options<troupe::algos::lsgd>(o).groups = 2;
  o.max_steps = 64;
  std::cout << "lsgd: seed " << o.seed << std::endl;
  auto j = run_train(o);
  INFO(j.dump());
  CHECK_FALSE(j.contains("error"));
  CHECK(j["steps"] == 4 * 64);
  CHECK(j["shards"] == 0);
  CHECK(j["leaders"]["groups"].size() == 2);
  CHECK(j["leader_changes"].is_number_unsigned());
  std::uint64_t rounds = 0, pulls = 0;
  for (auto& g : j["leaders"]["groups"])
    rounds += g["rounds"].get<std::uint64_t>();
  for (auto& w : j["worker_stats"])
    pulls += w["pulls"].get<std::uint64_t>();
  CHECK(rounds > 0);
  CHECK(pulls > 0);
  // Only leaders' parameters travel: far fewer bytes than downpour's
  // two model-sized messages per step.
  auto d = run_train(quick("downpour", 4));
  CHECK(j["bytes_sent"].get<double>() * 5
        < d["bytes_sent"].get<double>() * (64.0 / 40.0));
}

TEST_CASE("easgd: the center is evaluated, exchanges every tau steps") {
  auto o = quick("easgd", 2);
  troupe::apps::algorithm_options<troupe::algos::easgd>(o).tau = 4;
  std::cout << "easgd: seed " << o.seed << std::endl;
  auto j = run_train(o);
  INFO(j.dump());
  CHECK_FALSE(j.contains("error"));
  CHECK(j["easgd"]["alpha"].get<double>() == Approx(0.45));
  // 2 workers x 40 steps / tau 4 = 20 exchanges, each a push to 2 shards.
  CHECK(j["server_updates"] == 2 * 20);
  CHECK(j["test_accuracy"].get<double>() > 0.5);
}

TEST_CASE("dssync: the same seed gives the same parameters (every round "
          "waits for its group and averages in rank order)") {
  auto o = quick("dssync", 4);
  o.shards = 1;
  std::cout << "dssync reproducibility: seed " << o.seed << std::endl;
  auto a = run_train(o);
  INFO(a.dump().substr(0, 2000));
  CHECK_FALSE(a.contains("error"));
  CHECK(a["shards"] == 0);
  CHECK(a["steps"] == 4 * 40);
  CHECK(a["dssync"]["schedule"] == "digit");
  for (auto& w : a["worker_stats"])
    CHECK(w["mixes"] == 40);
  CHECK(run_train(o)["param_hash"] == a["param_hash"]);
  o.seed = 2;
  CHECK(run_train(o)["param_hash"] != a["param_hash"]);
}

TEST_CASE("sgp and shadow run from the command line and report their "
          "exchanges") {
  auto o = quick("sgp", 4);
  o.shards = 1;
  troupe::apps::algorithm_options<troupe::algos::sgp>(o).peers = 2;
  troupe::apps::algorithm_options<troupe::algos::sgp>(o).overlap = 1;
  std::cout << "sgp cli: seed " << o.seed << std::endl;
  auto j = run_train(o);
  INFO(j.dump().substr(0, 2000));
  CHECK_FALSE(j.contains("error"));
  CHECK(j["sgp"]["peers"] == 2);
  CHECK(j["sgp"]["overlap"] == 1);
  CHECK(j["sgp"]["weight_sum"].get<double>() == Approx(4).margin(1e-6));
  CHECK(j["optimizer"] == "nesterov");
  // Two shares per step, each the whole model.
  CHECK(j["messages"].get<double>() >= 4 * 40 * 2);
  for (std::string mode : {"ma", "bmuf", "easgd"}) {
    auto s = quick("shadow", 4);
    s.shards = 1;
    auto& shadow = troupe::apps::algorithm_options<troupe::algos::shadow>(s);
    shadow.mode = mode;
    s.max_steps = 100;
    if (mode == "bmuf")
      shadow.groups = 2;
    std::cout << "shadow cli " << mode << ": seed " << s.seed << std::endl;
    auto r = run_train(s);
    INFO(r.dump().substr(0, 2000));
    CHECK_FALSE(r.contains("error"));
    CHECK(r["shards"] == (mode == "easgd" ? 1 : 0));
    CHECK(r["shadow"]["mode"] == mode);
    // One syncer per node (this process), two with --groups=2.
    CHECK(r["shadow"]["syncers"].size() == (mode == "bmuf" ? 2 : 1));
    CHECK(r["shadow"]["rounds"].get<std::uint64_t>() > 0);
    for (auto& w : r["worker_stats"])
      CHECK(w["wait_seconds"].get<double>() == 0);
  }
}

TEST_CASE("downpour with --compress=adacomp reports its ratio per layer "
          "kind on lenet") {
  auto o = quick("downpour", 2);
  o.model = "lenet";
  troupe::apps::algorithm_options<troupe::algos::downpour>(o)
      .compression_settings.compress
      = "adacomp";
  o.max_steps = 30;
  std::cout << "adacomp cli: seed " << o.seed << std::endl;
  auto j = run_train(o);
  INFO(j.dump().substr(0, 2000));
  CHECK_FALSE(j.contains("error"));
  CHECK(j["compression"]["method"] == "adacomp");
  CHECK(j["compression_ratio"]["fc"].get<double>() > 50);
  CHECK(j["compression_ratio"]["conv"].get<double>() > 5);
  CHECK(j["residual_norm"].get<double>() > 0);
  CHECK(j["rejected_pushes"].empty());
}
