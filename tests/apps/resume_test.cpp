// Checkpoints and --resume of troupe train (issue [11]): a run resumed from
// any of its checkpoints ends with the uninterrupted run's parameters bit for
// bit (param_hash), the same examples seen (samples) and the same evaluation
// curve; a damaged latest checkpoint falls back to the one before; a resume
// that would change the job is refused naming the flags.

#include <filesystem>
#include <fstream>
#include <iostream>

#include <catch2/catch.hpp>

#include "algos/registry.hpp"
#include "checkpoint_runs.hpp"
#include "optim/atomic_file.hpp"
#include "optim/checkpoint_dir.hpp"

namespace fs = std::filesystem;
using troupe::test::run_result;

namespace {

run_result train(std::vector<std::string> args) {
  return troupe::test::run_train_main(std::move(args));
}

using troupe::test::last_json;

fs::path root() {
  static troupe::test::scratch_dir d{"resume_test"};
  return d.path();
}

/// A directory holding only checkpoint `step` of `from`.
std::string only(const fs::path& from, std::uint64_t step,
                 const std::string& name) {
  return troupe::test::only_checkpoint(root(), from, step, name);
}

std::vector<std::string> job(const std::string& seed,
                             std::initializer_list<std::string> more) {
  // 3000 examples of batch 64: 47 steps per epoch, 94 in all.
  std::vector<std::string> args{
      "--model=mlp",     "--epochs=2", "--train-examples=3000",
      "--progress=none", "--json",     "--eval-every=0.5",
      "--seed=" + seed};
  args.insert(args.end(), more);
  return args;
}

} // namespace

TEST_CASE("a resumed sgd run ends bit for bit where the uninterrupted one "
          "does") {
  const std::string optimizer = GENERATE("momentum", "adam");
  const std::string schedule = GENERATE("step", "cosine");
  std::cout << "seed 5, --optimizer=" << optimizer << " --schedule=" << schedule
            << std::endl;
  auto flags = job("5", {"--optimizer=" + optimizer, "--schedule=" + schedule});
  auto plain = last_json(train(flags));
  auto dir = root() / ("full-" + optimizer + "-" + schedule);
  auto with = flags;
  with.push_back("--checkpoint-dir=" + dir.string());
  with.push_back("--checkpoint-every=20");
  with.push_back("--keep=100");
  auto full = last_json(train(with));
  // Checkpointing changes nothing computed.
  CHECK(full["param_hash"] == plain["param_hash"]);
  CHECK(troupe::optim::checkpoint_steps(dir.string())
        == std::vector<std::uint64_t>{20, 40, 60, 80, 94});
  // 47 is an epoch's end; 20 and 60 are mid-epoch; 94 is the end.
  for (std::uint64_t step : {20, 47, 60, 94}) {
    INFO("resumed from step " << step);
    std::string from;
    if (step == 47) {
      // A checkpoint exactly at the epoch boundary: the run's own.
      auto d = root() / ("epoch-" + optimizer + "-" + schedule);
      fs::remove_all(d);
      auto at = flags;
      at.push_back("--checkpoint-dir=" + d.string());
      at.push_back("--checkpoint-every=47");
      at.push_back("--keep=100");
      last_json(train(at));
      from = only(d, 47, "from");
    } else {
      from = only(dir, step, "from");
    }
    auto resumed
        = last_json(train({"--resume=" + from, "--json", "--progress=none"}));
    CHECK(resumed["resumed_from"]["steps"] == step);
    CHECK(resumed["param_hash"] == plain["param_hash"]);
    CHECK(resumed["steps"] == plain["steps"]);
    CHECK(resumed["samples"] == plain["samples"]);
    CHECK(resumed["test_accuracy"] == plain["test_accuracy"]);
    REQUIRE(resumed["evaluations"].size() == plain["evaluations"].size());
    for (std::size_t i = 0; i < plain["evaluations"].size(); ++i) {
      CHECK(resumed["evaluations"][i]["step"]
            == plain["evaluations"][i]["step"]);
      CHECK(resumed["evaluations"][i]["test_loss"]
            == plain["evaluations"][i]["test_loss"]);
    }
  }
}

TEST_CASE("a damaged latest checkpoint falls back to the one before") {
  std::cout << "seed 6" << std::endl;
  auto flags = job("6", {});
  auto plain = last_json(train(flags));
  auto dir = root() / "damaged";
  fs::remove_all(dir);
  auto with = flags;
  with.push_back("--checkpoint-dir=" + dir.string());
  with.push_back("--checkpoint-every=30");
  last_json(train(with));
  // 30, 60, 90 and 94 written; keep 3: 60, 90, 94.
  CHECK(troupe::optim::checkpoint_steps(dir.string())
        == std::vector<std::uint64_t>{60, 90, 94});
  auto state = dir / "step-000000000094" / "worker-0.state";
  auto bytes = troupe::optim::read_whole_file(state.string());
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 4);
  std::ofstream{state, std::ios::binary | std::ios::trunc} << bytes;
  fs::remove(dir / "step-000000000090" / "MANIFEST.json"); // killed writer
  auto r = train({"--resume=" + dir.string(), "--json", "--progress=none"});
  auto resumed = last_json(r);
  CHECK(resumed["resumed_from"]["steps"] == 60);
  CHECK(resumed["param_hash"] == plain["param_hash"]);
  // The skipped checkpoints are named, with why.
  CHECK_THAT(r.err, Catch::Contains("skipped a newer checkpoint")
                        && Catch::Contains("worker-0.state")
                        && Catch::Contains("CRC-32")
                        && Catch::Contains("step-000000000090"));
  // The resumed run checkpoints into the same directory, as often (every
  // 30 steps, recorded in the checkpoint) and keeps 3.
  CHECK(troupe::optim::checkpoint_steps(dir.string())
        == std::vector<std::uint64_t>{60, 90, 94});
}

TEST_CASE("a resume that would change the job is refused naming the flags") {
  std::cout << "seed 7" << std::endl;
  auto dir = root() / "refusals";
  fs::remove_all(dir);
  auto with = job("7", {"--checkpoint-dir=" + dir.string(), "--max-steps=10",
                        "--checkpoint-every=5"});
  last_json(train(with));
  auto resume = "--resume=" + dir.string();

  auto r = train({resume, "--lr=0.5", "--model=lenet"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("is of another job")
                        && Catch::Contains("--lr=0.5 here, 0.05 in the "
                                           "checkpoint")
                        && Catch::Contains("--model=\"lenet\" here"));
  r = train({resume, "--algo=downpour"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("a job of --algo=sgd, not downpour"));
  // Without --algo the checkpoint's algorithm is the job's, and the given
  // flags are still checked against it.
  auto dp = root() / "refusals-downpour";
  fs::remove_all(dp);
  last_json(train(
      job("7", {"--algo=downpour", "--max-steps=10",
                "--checkpoint-dir=" + dp.string(), "--checkpoint-every=5"})));
  r = train({"--resume=" + dp.string(), "--lr=0.5"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("is of another job")
                        && Catch::Contains("--lr=0.5 here"));
  r = train({resume, "--init=x.safetensors"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("--init and --resume"));
  r = train({"--resume=" + (root() / "none").string()});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("no such directory"));
  auto empty = root() / "empty";
  fs::create_directories(empty);
  r = train({"--resume=" + empty.string()});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("no complete checkpoint"));
  // Flags that do not change what is computed may change; the same values
  // may be given again.
  auto ok = train({resume, "--max-seconds=100", "--lr=0.05", "--model=mlp",
                   "--json", "--progress=none"});
  CHECK(last_json(ok)["resumed_from"]["steps"] == 10);
  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"--checkpoint-every=0", "--checkpoint-dir=x"},
           {"--checkpoint-every=5q", "--checkpoint-dir=x"},
           {"--checkpoint-every=-3s", "--checkpoint-dir=x"},
           {"--checkpoint-every=1e400s", "--checkpoint-dir=x"},
           {"--keep=0", "--checkpoint-dir=x"},
           {"--checkpoint-every=10"},
           {"--keep=2"}}) {
    auto b = train(bad);
    INFO(bad.front() << ": " << b.err);
    CHECK(b.status == 2);
    CHECK_THAT(b.err, Catch::Contains("--checkpoint-every")
                          || Catch::Contains("--keep"));
  }
}

TEST_CASE("a resumed sync job ends bit for bit where the uninterrupted one "
          "does") {
  std::cout << "seed 8" << std::endl;
  // 2 workers of 47 steps each (3000 examples, batch 32 per worker).
  auto flags = job("8", {"--algo=sync", "--workers=2", "--shards=2",
                         "--epochs=1", "--batch=32", "--threads=2"});
  auto plain = last_json(train(flags));
  auto dir = root() / "sync";
  fs::remove_all(dir);
  auto with = flags;
  with.push_back("--checkpoint-dir=" + dir.string());
  with.push_back("--checkpoint-every=15");
  with.push_back("--keep=100");
  auto full = last_json(train(with));
  CHECK(full["param_hash"] == plain["param_hash"]);
  auto steps = troupe::optim::checkpoint_steps(dir.string());
  INFO("checkpoints at " << nlohmann::json(steps).dump());
  // The workers pause at their next step boundaries: one may be a round
  // ahead of the other (its push waits in the shards' pending round).
  REQUIRE(steps.size() >= 3);
  for (auto step : steps) {
    INFO("resumed from step " << step);
    auto from = only(dir, step, "from-sync");
    auto resumed = last_json(train(
        {"--resume=" + from, "--json", "--progress=none", "--threads=2"}));
    CHECK(resumed["resumed_from"]["steps"] == step);
    CHECK(resumed["param_hash"] == plain["param_hash"]);
    CHECK(resumed["steps"] == plain["steps"]);
    CHECK(resumed["samples"] == plain["samples"]);
    // (The evaluations during the run are not compared: the evaluator reads
    // the shards whenever it runs, asynchronously.)
    CHECK(resumed["test_accuracy"] == plain["test_accuracy"]);
  }
}

TEST_CASE("a resumed downpour job sees every example once per epoch and "
          "learns as much") {
  std::cout << "seed 9" << std::endl;
  // Five epochs: on the plateau, where asynchronous runs agree within a
  // few points (0.77-0.78 in four runs side by side).
  auto flags = job("9", {"--algo=downpour", "--workers=3", "--shards=2",
                         "--epochs=5", "--threads=2"});
  auto plain = last_json(train(flags));
  auto dir = root() / "downpour";
  fs::remove_all(dir);
  auto with = flags;
  with.push_back("--checkpoint-dir=" + dir.string());
  with.push_back("--checkpoint-every=100");
  with.push_back("--keep=100");
  last_json(train(with));
  auto steps = troupe::optim::checkpoint_steps(dir.string());
  REQUIRE(steps.size() >= 2);
  auto from = only(dir, steps[steps.size() / 2], "from-downpour");
  auto resumed = last_json(
      train({"--resume=" + from, "--json", "--progress=none", "--threads=2"}));
  // The ledger: every worker's examples, each once per epoch, across the
  // checkpoint (each worker's own count adds up to its planned steps).
  CHECK(resumed["steps"] == plain["steps"]);
  CHECK(resumed["samples"] == plain["samples"]);
  REQUIRE(resumed["worker_stats"].size() == 3);
  for (std::size_t w = 0; w < 3; ++w) {
    CHECK(resumed["worker_stats"][w]["steps"]
          == plain["worker_stats"][w]["steps"]);
    CHECK(resumed["worker_stats"][w]["samples"]
          == plain["worker_stats"][w]["samples"]);
  }
  // Asynchronous: not bit for bit, but as good.
  CHECK(resumed["test_accuracy"].get<double>()
        == Approx(plain["test_accuracy"].get<double>()).margin(0.05));
}

TEST_CASE("every built-in algorithm can be checkpointed") {
  // lsgd, sgp, easgd, dssync and shadow were refused with --checkpoint-dir
  // until they could be (resume_algos_test.cpp), lbfgs too
  // (resume_lbfgs_test.cpp), allreduce too (its workers pause after one
  // step agreed on the ring). An application's own algorithm that saves no
  // state is still refused, with its checkpoint_refusal().
  // (sgd runs in one loop without actors and checkpoints there.)
  for (const auto& e : troupe::algos::registered_algorithms()) {
    auto a = e.make();
    INFO(e.name);
    CHECK((a->run_by() == troupe::algos::runner::single_loop
           || a->checkpointable()));
  }
}

TEST_CASE("--max-seconds of a resumed run counts this run's time") {
  std::cout << "seed 10" << std::endl;
  auto dir = root() / "limit";
  fs::remove_all(dir);
  last_json(train(job("10", {"--checkpoint-dir=" + dir.string(),
                             "--max-steps=30", "--checkpoint-every=10"})));
  // The checkpoint at step 20 says a day went by before it.
  auto manifest = dir / "step-000000000020" / "MANIFEST.json";
  auto m = nlohmann::json::parse(
      troupe::optim::read_whole_file(manifest.string()));
  auto info = nlohmann::json::parse(m["info"].get<std::string>());
  info["seconds"] = 86400.0;
  m["info"] = info.dump();
  std::ofstream{manifest, std::ios::trunc} << m.dump();
  fs::remove_all(dir / "step-000000000030");
  auto r = last_json(train({"--resume=" + dir.string(), "--max-seconds=100",
                            "--json", "--progress=none"}));
  CHECK(r["resumed_from"]["steps"] == 20);
  CHECK(r["steps"] == 30);
  CHECK(r["stop_reason"] == "steps done");
  CHECK(r["seconds"].get<double>() > 86400.0);
}
