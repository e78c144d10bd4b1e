// troupe train --stages (issue [16]): the flags' refusals, a parameter
// budget only a cut model fits, and the JSON's pipeline section.

#include <iostream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "capture.hpp"

namespace {

troupe::test::run_result run(std::vector<std::string> args) {
  std::vector<std::string> all{"--model=mlp", "--train-examples=2048",
                               "--progress=none", "--json"};
  if (args.empty() || args[0].rfind("--algo=", 0) != 0)
    all.insert(all.begin(), "--algo=downpour");
  all.insert(all.end(), args.begin(), args.end());
  return troupe::test::run_train_main(std::move(all));
}

nlohmann::json last(const std::string& out) {
  return nlohmann::json::parse(
      out.substr(out.find_last_of('\n', out.size() - 2) + 1));
}

void refused(std::vector<std::string> args, const std::string& says) {
  auto r = run(std::move(args));
  INFO(r.err);
  CHECK(r.status != 0);
  CHECK_THAT(r.err, Catch::Contains(says));
}

} // namespace

TEST_CASE("--stages refuses what it cannot run, naming the flag") {
  refused({"--micro-batches=4"}, "--micro-batches applies with --stages=2");
  refused({"--stages=0"}, "--stages must be from 1 to 64");
  refused({"--stages=2", "--micro-batches=0"},
          "--micro-batches must be from 1 to 1024");
  refused({"--stages=2", "--micro-batches=65", "--batch=64"},
          "every micro-batch needs a sample");
  refused({"--stages=2", "--pipeline=pipedream"}, "use gpipe or 1f1b");
  refused({"--stages=2", "--weight-stashing=false"},
          "--weight-stashing applies with --pipeline=1f1b");
  refused({"--stages=2", "--n-fetch=2"},
          "--n-fetch does not combine with --stages");
  refused({"--stages=2", "--compress=topk"},
          "--compress does not combine with --stages");
  refused({"--stages=6"}, "5 layers into 6 stages");
  refused({"--stages=2", "--cut=conv1"}, "no layer named \"conv1\"");
  refused({"--stages=3", "--cut=relu1"}, "--stages=3 needs 2");
  refused({"--max-params-per-actor=210000"},
          "235146 parameters, more than --max-params-per-actor=210000");
  refused({"--stages=2", "--max-params-per-actor=100000"},
          "dense1 alone has 200960 parameters");
  refused({"--algo=sync", "--stages=2", "--pipeline=1f1b"},
          "a synchronous round takes one push per replica");
  refused({"--algo=sync", "--stages=2", "--aggregation=median"},
          "--aggregation does not combine with --stages");
}

TEST_CASE("sync with --stages: the replicas' rounds go on") {
  auto r = run({"--algo=sync", "--stages=2", "--workers=2", "--max-steps=15"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto j = last(r.out);
  CHECK(j["pipeline"]["cut"] == "dense1 | relu1..dense3");
  CHECK(j["steps"] == 30);
  for (const auto& s : j["shard_stats"])
    CHECK(s["version"] == 15); // one round a step
}

TEST_CASE("a model over the parameter budget trains cut in two; the JSON "
          "reports the pipeline") {
  std::cout << "pipeline cli: seed 1" << std::endl;
  auto r = run({"--stages=2", "--micro-batches=2", "--max-steps=20",
                "--max-params-per-actor=210000", "--workers=2"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto j = last(r.out);
  const auto& p = j["pipeline"];
  CHECK(p["cut"] == "dense1 | relu1..dense3");
  CHECK(p["micro_batches"] == 2);
  CHECK(p["schedule"] == "gpipe");
  CHECK(p["rebuilds"] == 0);
  CHECK(p["activation_bytes_per_sample"] == 2 * 4 * 256);
  CHECK(p["bubble_expected"].get<double>() == Approx(1.0 / 3));
  const double bubble = p["bubble_fraction"].get<double>();
  CHECK(bubble > 0);
  CHECK(bubble < 1);
  for (const auto& s : p["stages"])
    CHECK(s["params"].get<std::uint64_t>() <= 210000);
  for (const auto& s : j["shard_stats"])
    CHECK(s["size"].get<std::uint64_t>() <= 210000);
  // The shards the job ran, one per stage here (--shards is 1).
  CHECK(j["shards"] == j["shard_stats"].size());
  CHECK(j["shards"] == p["shards"]);
  CHECK(j["steps"] == 40);
  CHECK(j["test_accuracy"].get<double>() > 0.3);
}
