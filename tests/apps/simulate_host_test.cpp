// troupe simulate's model of processes on one host (docs/simulation.md, "One
// host"): fair sharing of its cores, a node's threads, and the page faults of
// a fresh shared-memory segment change what they must and are refused by
// name where they cannot apply.

#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "simulate_helpers.hpp"

using namespace troupe::test::simulate;

TEST_CASE("--core-sharing, --node-threads and --first-touch-gbps cost what "
          "they say") {
  // Sync's rounds do not depend on timing: the same messages every run.
  std::vector<std::string> args{"--algo=sync", "--workers=2", "--shards=1",
                                "--seed=5", "--shard-nodes=coordinator"};
  auto with = [&](std::vector<std::string> more) {
    auto all = args;
    all.insert(all.end(), more.begin(), more.end());
    return last(run(all));
  };
  // One core for three nodes, shared fairly: the same steps, other times,
  // slower than with a core a node.
  auto one = with({"--host-cores=1"});
  auto three = with({"--host-cores=3"});
  auto fair = with({"--host-cores=1", "--core-sharing=fair"});
  CHECK(fair["steps"] == one["steps"]);
  CHECK(fair["simulation"]["compute"]["core_sharing"] == "fair");
  CHECK(one["simulation"]["compute"]["core_sharing"] == "fifo");
  CHECK(fair["simulation"]["trace_hash"] != one["simulation"]["trace_hash"]);
  CHECK(simulated(fair) > simulated(three));
  // One thread a node: the coordinator's node runs its shard and its
  // evaluator one at a time.
  auto threads = with({"--host-cores=3", "--node-threads=1"});
  CHECK(threads["steps"] == three["steps"]);
  CHECK(simulated(threads) >= simulated(three));
  CHECK(threads["simulation"]["compute"]["node_threads"] == 1);
  // A fresh segment's pages cost their faults on top of the copies.
  auto shm = with({"--serialize-gbps=4", "--host-shm"});
  auto touch
      = with({"--serialize-gbps=4", "--host-shm", "--first-touch-gbps=8"});
  CHECK(touch["simulation"]["serialize_seconds"].get<double>()
        > shm["simulation"]["serialize_seconds"].get<double>());
  CHECK(touch["steps"] == shm["steps"]);
  CHECK(simulated(touch) > simulated(shm));
  refused({"--first-touch-gbps=-1"}, "--first-touch-gbps must be in [0, 1e6]");
  refused({"--node-threads=2", "--core-sharing=fair"},
          "--node-threads needs --core-sharing=fifo");
  refused({"--node-threads=5000"}, "--node-threads must be at most 4096");
  refused({"--core-sharing=round-robin"},
          "--core-sharing must be fifo or fair, not 'round-robin'");
}
