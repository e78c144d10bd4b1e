// troupe simulate (issue [17]): a train job's real actors on a simulated
// cluster. The same flags give the same trace (CI's run-twice check), the
// cluster's settings change the simulated time the way they must, every
// algorithm that runs as actors runs, and bad flags are refused by name.

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "algos/registry.hpp"
#include "capture.hpp"
#include "simulate_helpers.hpp"

using namespace troupe::test::simulate;

TEST_CASE("the same flags give the same simulation, event for event") {
  std::vector<std::string> args{"--workers=4", "--shards=2", "--seed=3",
                                "--stragglers=0.2:3"};
  std::cout << "seed 3\n";
  auto a = last(run(args)), b = last(run(args));
  CHECK(a["simulation"]["trace_hash"] == b["simulation"]["trace_hash"]);
  CHECK(a["simulation"]["events"] == b["simulation"]["events"]);
  CHECK(a["test_accuracy"] == b["test_accuracy"]);
  CHECK(a["seconds"] == b["seconds"]);
  CHECK(a["simulation"]["straggles"].get<int>() > 0);
  // The JSON of troupe train, plus the simulation's figures.
  for (auto key :
       {"test_accuracy", "steps", "samples_per_sec", "workers", "algo", "seed"})
    CHECK(a.contains(key));
  CHECK(a["simulation"]["nodes"] == 1 + 4 + 2);
  CHECK(a["simulation"]["compute"]["source"] == "flops");
  // Another seed draws other stragglers.
  args[2] = "--seed=4";
  auto c = last(run(args));
  CHECK(c["simulation"]["trace_hash"] != a["simulation"]["trace_hash"]);
}

TEST_CASE("--jitter draws each step's time; --timing-seed other timing") {
  std::vector<std::string> args{"--workers=4", "--shards=2", "--seed=3",
                                "--jitter=0.3"};
  std::cout << "seed 3, timing seeds 3 and 8\n";
  auto a = last(run(args)), b = last(run(args));
  CHECK(a["simulation"]["trace_hash"] == b["simulation"]["trace_hash"]);
  CHECK(a["simulation"]["compute"]["jitter"] == 0.3);
  CHECK(a["simulation"]["compute"]["timing_seed"] == 3);
  // The timing seed defaults to the job's seed.
  args.push_back("--timing-seed=3");
  auto c = last(run(args));
  CHECK(c["simulation"]["trace_hash"] == a["simulation"]["trace_hash"]);
  // Another timing seed: the same job (its data order and initialization
  // are the seed's) under other step times, so another trace; about the
  // same compute in all (every step's factor has mean 1).
  args.back() = "--timing-seed=8";
  auto d = last(run(args));
  CHECK(d["simulation"]["trace_hash"] != a["simulation"]["trace_hash"]);
  args.pop_back();
  args.back() = "--jitter=0";
  auto e = last(run(args));
  CHECK(e["simulation"]["trace_hash"] != a["simulation"]["trace_hash"]);
  auto compute = [](const nlohmann::json& j) {
    return j["simulation"]["compute_seconds"].get<double>();
  };
  CHECK(compute(a) == Approx(compute(e)).epsilon(0.25));
  CHECK(compute(d) == Approx(compute(e)).epsilon(0.25));
  CHECK(compute(a) != compute(e));
  // An evaluation of a fixed time: the job's last one ends it.
  auto eval = [&](std::string secs) {
    return simulated(last(run({"--workers=2", "--eval-seconds=" + secs})));
  };
  auto free = eval("0"), slow = eval("20");
  CHECK(slow >= 20);
  CHECK(free < slow - 15);
}

TEST_CASE("the simulated time answers to the network and the compute") {
  auto at = [](std::string gbps, std::vector<std::string> more = {}) {
    std::vector<std::string> args{"--workers=4", "--link-gbps=" + gbps,
                                  "--sample-seconds=0.0001"};
    args.insert(args.end(), more.begin(), more.end());
    return last(run(args));
  };
  auto slow = at("1"), fast = at("100");
  // Downpour moves two copies of the parameters (0.94 MB each) per step:
  // at 1 Gb/s that is what takes the time.
  CHECK(training(slow) > 2 * training(fast));
  // About as many bytes either way (the order of pushes and fetches
  // differs).
  CHECK(slow["simulation"]["network_bytes"].get<double>()
        == Approx(fast["simulation"]["network_bytes"].get<double>())
               .epsilon(0.05));
  // Compute alone: 8 steps of 64 samples per worker at 0.1 ms a sample.
  CHECK(training(fast) >= 8 * 64 * 1e-4);
  // One slow node holds back a synchronous job.
  auto sync = [&](std::vector<std::string> more) {
    std::vector<std::string> args{"--algo=sync", "--workers=4",
                                  "--sample-seconds=0.0001"};
    args.insert(args.end(), more.begin(), more.end());
    return training(last(run(args)));
  };
  CHECK(sync({"--slow-nodes=1:4"}) > 2.5 * sync({}));
}

TEST_CASE("every algorithm that runs as actors runs simulated") {
  for (const auto& e : troupe::algos::registered_algorithms()) {
    auto algo = e.make();
    if (algo->run_by() != troupe::algos::runner::coordinator)
      continue;
    INFO("--algo=" << e.name);
    auto j = last(run({"--algo=" + e.name, "--workers=3"}));
    CHECK(j["steps"].get<int>() > 0);
    CHECK(simulated(j) > 0);
    CHECK(j["simulation"]["remote_messages"].get<int>() > 0);
  }
}

TEST_CASE("a crashed worker's node ends its worker; the job goes on") {
  // Downpour hands a lost worker's steps to the others: the step ledger
  // still adds up to the budget.
  auto j = last(
      run({"--workers=4", "--sample-seconds=0.001", "--crash=worker:2@0.1"}));
  INFO(j.dump());
  REQUIRE(j["simulation"]["crashes"].size() == 1);
  CHECK(j["simulation"]["crashes"][0]["node"] == 3);
  CHECK(j["simulation"]["crashes"][0]["seconds"] == 0.1);
  REQUIRE(j["failures"].size() == 1);
  CHECK(j["failures"][0]["role"] == "worker");
  CHECK(j["failures"][0]["index"] == 2);
  // Lost at 0.1 simulated seconds (and found lost no later than that).
  CHECK(j["failures"][0]["seconds"].get<double>() <= 0.1 + 1e-3);
  CHECK(j["steps_done"] == j["steps_planned"]);
  CHECK(j["step_ledger"]["done_by_lost_workers"].get<int>() > 0);
}

TEST_CASE("--compare runs several algorithms on one cluster, side by side") {
  auto dir = std::filesystem::temp_directory_path()
             / ("troupe-compare-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto r = troupe::test::run_train_main(
      {"--compare=downpour,sgp", "--model=mlp", "--train-examples=2048",
       "--workers=3", "--eval-every=0.5", "--progress=none", "--json",
       "--report=" + dir.string()},
      true);
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto j = last(r);
  REQUIRE(j["compare"].size() == 2);
  CHECK(j["compare"][0]["algo"] == "downpour");
  CHECK(j["compare"][1]["algo"] == "sgp");
  for (const auto& one : j["compare"]) {
    CHECK(one["evaluations"].size() >= 2);
    CHECK(one["simulation"]["simulated_seconds"].get<double>() > 0);
  }
  CHECK_THAT(r.err, Catch::Contains("compared on one simulated cluster"));
  std::ifstream svg{dir / "compare.svg"};
  std::string text{std::istreambuf_iterator<char>{svg}, {}};
  CHECK_THAT(text, Catch::Contains("simulated time (s)"));
  CHECK_THAT(text, Catch::Contains("downpour"));
  CHECK_THAT(text, Catch::Contains("sgp"));
  CHECK(std::filesystem::exists(dir / "index.html"));
  CHECK(std::filesystem::exists(dir / "downpour" / "index.html"));
  CHECK(std::filesystem::exists(dir / "sgp" / "result.json"));
  std::filesystem::remove_all(dir);
  auto no = [](std::vector<std::string> args, const std::string& says) {
    auto x = troupe::test::run_train_main(std::move(args), true);
    INFO(x.err);
    CHECK(x.status == 2);
    CHECK_THAT(x.err, Catch::Contains(says));
  };
  no({"--compare=downpour"}, "--compare takes 2 to 8 algorithms");
  no({"--compare=sgp,sgp"}, "--compare names sgp twice");
  no({"--compare=sgp,moon"}, "unknown algorithm 'moon'");
  no({"--compare=sgp,downpour", "--algo=sgp"}, "drop --algo");
}

TEST_CASE("troupe simulate refuses what it cannot simulate, by name") {
  refused({"--algo=sgd"}, "--algo=sgd does not run as actors");
  refused({"--algo=lbfgs"}, "--algo=lbfgs does not run as actors under a "
                            "coordinator; it cannot be simulated");
  refused({"--listen=127.0.0.1:0"}, "--listen does not apply");
  refused({"--monitor=127.0.0.1:0"}, "--monitor does not apply");
  refused({"--link-gbps=0"}, "--link-gbps must be in (0, 100000]");
  refused({"--latency-us=-1"}, "--latency-us");
  refused({"--oversubscription=0.5"}, "--oversubscription");
  refused({"--stragglers=0.5"}, "--stragglers=0.5 is not P:F");
  refused({"--stragglers=2:3"}, "P in [0, 1]");
  refused({"--jitter=-0.1"}, "--jitter must be in [0, 4]");
  refused({"--jitter=nan"}, "invalid value for --jitter");
  refused({"--eval-seconds=1e6"}, "--eval-seconds must be at most 86400");
  refused({"--shm-share=5"}, "--shm-share must be in [0, 4]");
  refused({"--slow-nodes=5:2", "--workers=4"}, "K in [0, --workers]");
  refused({"--slow-nodes=1:x"}, "--slow-nodes=1:x is not K:F");
  refused({"--shard-nodes=moon"},
          "--shard-nodes must be own, workers or coordinator");
  refused({"--sample-seconds=-1"}, "--sample-seconds");
  refused({"--node-gflops=0"}, "--node-gflops");
  refused({"--wall-seconds=0"}, "--wall-seconds");
  refused({"--crash=worker:9@1", "--workers=4"}, "there are 4 workers");
  refused({"--crash=moon:0@1"}, "worker, shard or node");
  refused({"--crash=worker:1"}, "not ROLE:I@SECONDS");
  refused({"--crash=worker:1@-2", "--workers=2"}, "seconds from 0");
  // Every replica is real: a cluster that cannot fit in memory is refused
  // before it starts (50000 mlp replicas: about 188 GB).
  refused({"--workers=50000", "--train-examples=60000"},
          "50000 replicas of 235146 parameters need about");
  refused({"--workers=2000000"}, "--workers must be in [1, 1000000]");
}

TEST_CASE("troupe simulate --help fits 80 columns and lists the cluster") {
  auto r = troupe::test::run_train_main({"--help"}, true);
  CHECK(r.status == 0);
  std::istringstream lines{r.out};
  std::string line;
  while (std::getline(lines, line)) {
    INFO(line);
    CHECK(line.size() <= 80);
  }
  for (auto name :
       {"the simulated cluster:", "--link-gbps", "--stragglers", "--rack-size",
        "--virtual-params", "--serialize-gbps", "--host-cores",
        "--core-sharing", "--algo", "--compare=A,B"})
    CHECK_THAT(r.out, Catch::Contains(name));
  // With --compare too: the help, not a comparison of nothing.
  auto c = troupe::test::run_train_main({"--compare=sgp,downpour", "--help"},
                                        true);
  CHECK(c.status == 0);
  CHECK(c.out == r.out);
}

TEST_CASE("--virtual-params costs a small model's job as a big one's") {
  // Sync SGD sends the same messages whatever their timing: the runs with
  // and without --virtual-params differ in bytes and time only.
  std::vector<std::string> args{"--algo=sync", "--workers=4", "--shards=2",
                                "--seed=5"};
  auto with = [&](std::vector<std::string> more) {
    auto all = args;
    all.insert(all.end(), more.begin(), more.end());
    return last(run(all));
  };
  auto small = with({});
  const auto& s = small["simulation"];
  auto d = s["real_params"].get<std::uint64_t>();
  CHECK(d == 235146); // mlp
  CHECK(s["virtual_params"] == d);
  CHECK(s["payload_scale"] == 1.0);
  auto big = with({"--virtual-params=" + std::to_string(10 * d)});
  auto again = with({"--virtual-params=" + std::to_string(10 * d)});
  const auto& b = big["simulation"];
  INFO(s.dump() << '\n' << b.dump());
  CHECK(b["real_params"] == d);
  CHECK(b["virtual_params"] == 10 * d);
  CHECK(b["payload_scale"] == 10.0);
  CHECK(b["compute"]["update_scale"] == 10.0);
  // The same messages (sync's rounds do not depend on timing while compute
  // and transfers slow down alike): the tensors' bytes exactly ten times,
  // the rest (headers, small fields) as they were.
  REQUIRE(b["remote_messages"] == s["remote_messages"]);
  auto payload = [](const nlohmann::json& x) {
    return x["payload_bytes"].get<std::uint64_t>();
  };
  auto rest = [&](const nlohmann::json& x) {
    return x["network_bytes"].get<std::uint64_t>() - payload(x);
  };
  CHECK(payload(s) > 0);
  CHECK(payload(b) == 10 * payload(s));
  CHECK(rest(b) == rest(s));
  // On the links: ~10x. Every message carries 64 header bytes and a few
  // dozen of fields, unscaled, against a shard's half of the mlp (470 kB
  // at 1x): the headers are well under 1% of the bytes.
  auto ratio
      = b["network_bytes"].get<double>() / s["network_bytes"].get<double>();
  CHECK(ratio > 9.9);
  CHECK(ratio <= 10.0);
  // Compute per sample (from the flops) and the transfers are 10x: the
  // simulated time grows about as much.
  CHECK(b["compute"]["sample_seconds"].get<double>()
        == Approx(10 * s["compute"]["sample_seconds"].get<double>()));
  CHECK(training(big) > 5 * training(small));
  // Convergence is the small model's: the same steps and accuracy.
  CHECK(big["steps"] == small["steps"]);
  CHECK(big["test_accuracy"] == small["test_accuracy"]);
  // And deterministic.
  CHECK(again["simulation"]["trace_hash"] == b["trace_hash"]);
  CHECK(again["seconds"] == big["seconds"]);
  CHECK(b["trace_hash"] != s["trace_hash"]);
  // D = d is the job as it is, event for event.
  auto same = with({"--virtual-params=" + std::to_string(d)});
  CHECK(same["simulation"]["trace_hash"] == s["trace_hash"]);
  // A given --sample-seconds is the big model's own: not scaled.
  auto given = with({"--virtual-params=1e7", "--sample-seconds=0.0001"});
  CHECK(given["simulation"]["compute"]["sample_seconds"] == 0.0001);
  CHECK(given["simulation"]["compute"]["source"] == "given");
}

TEST_CASE("troupe simulate refuses a --virtual-params it cannot use") {
  refused({"--virtual-params=0"}, "--virtual-params='0' must be in [1, 10^12]");
  refused({"--virtual-params=-5"}, "--virtual-params='-5' must be in");
  refused({"--virtual-params=1e13"}, "must be in [1, 10^12]");
  refused({"--virtual-params=moon"},
          "--virtual-params='moon' is not a count of parameters");
  refused({"--virtual-params=2.5"}, "is not a count of parameters");
  refused({"--virtual-params=1000"},
          "--virtual-params=1000 is less than the model's 235146 parameters");
}

TEST_CASE("--serialize-gbps, --host-shm and --host-cores cost what they say") {
  // Sync's rounds do not depend on timing: the same messages every run.
  std::vector<std::string> args{"--algo=sync", "--workers=2", "--shards=1",
                                "--seed=5", "--shard-nodes=coordinator"};
  auto with = [&](std::vector<std::string> more) {
    auto all = args;
    all.insert(all.end(), more.begin(), more.end());
    return last(run(all));
  };
  auto plain = with({});
  auto zero
      = with({"--serialize-gbps=0", "--host-cores=0", "--host-shm=false"});
  CHECK(zero["simulation"]["trace_hash"] == plain["simulation"]["trace_hash"]);
  CHECK(plain["simulation"]["serialize_seconds"] == 0.0);
  auto paid = with({"--serialize-gbps=4"});
  const auto& p = plain["simulation"];
  const auto& s = paid["simulation"];
  REQUIRE(s["remote_messages"] == p["remote_messages"]);
  // Every byte on the links, once a side at 4 Gb/s (each message's time
  // rounded up to a nanosecond; the last ones may be left in flight at the
  // end).
  auto bytes = p["network_bytes"].get<double>();
  auto ser = s["serialize_seconds"].get<double>();
  auto n = s["remote_messages"].get<double>();
  CHECK(ser >= 0.99 * 2 * bytes * 8 / 4e9);
  CHECK(ser <= 2 * bytes * 8 / 4e9 + 2 * n * 1e-9 + 1e-9);
  CHECK(simulated(paid) > simulated(plain) + ser / 4);
  // Through shared memory: the links carry references, and the values cost
  // half as much CPU.
  auto shm = with({"--serialize-gbps=4", "--host-shm"});
  const auto& m = shm["simulation"];
  REQUIRE(m["remote_messages"] == p["remote_messages"]);
  CHECK(m["payload_bytes"] == p["payload_bytes"]);
  CHECK(m["network_bytes"].get<double>() < 0.01 * bytes);
  CHECK(m["serialize_seconds"].get<double>() < 0.51 * ser);
  CHECK(m["serialize_seconds"].get<double>() > 0.49 * ser);
  auto more = with({"--serialize-gbps=4", "--host-shm", "--shm-share=0.8"});
  CHECK(more["simulation"]["serialize_seconds"].get<double>()
        == Approx(0.8 * ser).epsilon(0.01));
  // One core for three nodes: work waits for it, and the job takes longer
  // than with a core a node.
  auto one = with({"--host-cores=1"});
  auto three = with({"--host-cores=3"});
  CHECK(one["simulation"]["core_wait_seconds"].get<double>() > 0);
  CHECK(simulated(one) > simulated(three));
  CHECK(one["steps"] == three["steps"]);
  refused({"--serialize-gbps=-1"}, "--serialize-gbps must be in [0, 1e6]");
  refused({"--host-cores=5000"}, "--host-cores must be at most 4096");
}
