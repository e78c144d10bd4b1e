// troupe train with --byzantine, robust rules and --worker-momentum (issue
// [15]): the JSON names the attackers and what the rules discarded, gossip
// refuses a NaN attacker's models without waiting, and worker momentum's
// defaults.

#include <cmath>
#include <iostream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "capture.hpp"

namespace {

troupe::test::run_result run(std::vector<std::string> args) {
  return troupe::test::run_train_main(std::move(args));
}

/// The JSON on the last line of a run's output.
nlohmann::json last(const std::string& out) {
  return nlohmann::json::parse(
      out.substr(out.find_last_of('\n', out.size() - 2) + 1));
}

} // namespace

TEST_CASE("sync with --byzantine and a robust rule: the JSON names the "
          "attackers and what the rule discarded; NaN pushes are refused") {
  std::cout << "sync byzantine: seed 1" << std::endl;
  auto r = run({"--algo=sync", "--model=mlp", "--workers=6", "--shards=2",
                "--train-examples=4096", "--max-steps=20", "--json",
                "--progress=none", "--aggregation=multi_krum", "--agg-f=1",
                "--byzantine=1", "--attack=sign_flip", "--attack-scale=5"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto j = last(r.out);
  CHECK(j["byzantine"]["workers"] == nlohmann::json::array({5}));
  CHECK(j["byzantine"]["attack"] == "sign_flip");
  std::uint64_t gone = 0;
  for (const auto& x : j["rejected_pushes"])
    if (x["reason"] == "discarded_by_rule" && x["worker"] == 5)
      gone += x["count"].get<std::uint64_t>();
  CHECK(gone == 2 * 20); // every round of both shards
  auto n = run({"--algo=sync", "--model=mlp", "--workers=4", "--shards=1",
                "--train-examples=2048", "--max-steps=10", "--json",
                "--progress=none", "--aggregation=median", "--byzantine=1",
                "--attack=nan"});
  INFO(n.err);
  REQUIRE(n.status == 0);
  CHECK_THAT(n.out, Catch::Contains("non_finite"));
}

TEST_CASE("gossip with --byzantine: a NaN attacker's copies are refused "
          "without waits, and the honest workers' mean is evaluated") {
  std::cout << "dssync byzantine: seed 1" << std::endl;
  auto r = run({"--algo=dssync", "--model=mlp", "--workers=4",
                "--train-examples=2048", "--max-steps=12", "--json",
                "--progress=none", "--aggregation=cclip", "--agg-clip-radius=2",
                "--byzantine=1", "--attack=nan", "--request-timeout=30"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto j = last(r.out);
  CHECK(j["dssync"]["mixing"]["rule"] == "cclip");
  CHECK(j["dssync"]["evaluated"] == "mean of the honest workers' models");
  CHECK(std::isfinite(j["test_loss"].get<double>()));
  std::uint64_t discarded = 0;
  for (const auto& w : j["worker_stats"]) {
    CHECK(w["timeouts"] == 0); // a garbled copy is heard, not waited for
    discarded += w.value("mix_discarded", std::uint64_t{0});
  }
  CHECK(discarded > 0);
}

TEST_CASE("--worker-momentum makes the momentum the workers': sgd applies "
          "the pushes at the model's rate / (1 - beta), unless given") {
  std::cout << "worker momentum: seed 1" << std::endl;
  std::vector<std::string> base{"--algo=sync",     "--model=mlp",
                                "--workers=2",     "--train-examples=512",
                                "--max-steps=4",   "--json",
                                "--progress=none", "--worker-momentum=0.9"};
  auto r = run(base);
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto j = last(r.out);
  CHECK(j["optimizer"] == "sgd");
  CHECK(j["lr"].get<double>() == Approx(0.05 / 0.1));
  CHECK(j["worker_momentum"] == 0.9);
  base.push_back("--optimizer=momentum");
  base.push_back("--lr=0.01");
  r = run(base);
  REQUIRE(r.status == 0);
  j = last(r.out);
  CHECK(j["optimizer"] == "momentum");
  CHECK(j["lr"].get<double>() == Approx(0.01));
  auto bad = run({"--algo=sync", "--worker-momentum=1"});
  CHECK(bad.status != 0);
  CHECK_THAT(bad.err, Catch::Contains("--worker-momentum"));
}
