// Checkpoints and --resume of the algorithms with state of their own (issue
// [11]): an EASGD, LSGD, SGP, DS-Sync, SSP (downpour under a staleness
// bound) or ShadowSync run resumed from a checkpoint taken mid-run
// sees every worker's examples once per epoch (each worker's steps and
// samples, and the step ledger, add up to the uninterrupted run's) and
// learns as much; LSGD's leaders, SGP's push-sum mass and ShadowSync's
// syncers' rounds carry across.

#include <filesystem>
#include <iostream>

#include <catch2/catch.hpp>

#include "algos/shadow/shadow_state.hpp"
#include "checkpoint_runs.hpp"
#include "optim/atomic_file.hpp"
#include "optim/checkpoint_dir.hpp"

namespace fs = std::filesystem;
using troupe::test::run_result;

namespace {

using troupe::test::last_json;

fs::path root() {
  static troupe::test::scratch_dir d{"resume_algos_test"};
  return d.path();
}

/// A directory holding only checkpoint `step` of `from`.
std::string only(const fs::path& from, std::uint64_t step,
                 const std::string& name) {
  return troupe::test::only_checkpoint(root(), from, step, name);
}

/// Rounds triggered by the leader board, whatever became of them.
std::uint64_t lsgd_triggers(const nlohmann::json& out) {
  const auto& l = out["leaders"];
  std::uint64_t n = l["busy_skipped_rounds"].get<std::uint64_t>();
  for (const auto& g : l["groups"])
    n += g["rounds"].get<std::uint64_t>()
         + g["skipped_rounds"].get<std::uint64_t>();
  return n;
}

/// The plain run, the checkpointed run and the run resumed from its middle
/// checkpoint, of `algo` with `more` flags.
struct runs {
  nlohmann::json plain, resumed;
  std::uint64_t from = 0;
  fs::path checkpoint; ///< the checkpoint resumed from
};

/// `name` keeps apart the directories of two runs of one algorithm.
runs run_three(const std::string& algo, const std::string& seed,
               std::vector<std::string> more, int workers = 3,
               const std::string& name = {}) {
  // 3 workers, 3000 examples of batch 64: 48 steps each, 144 in all.
  std::vector<std::string> flags{"--model=mlp",
                                 "--epochs=3",
                                 "--train-examples=3000",
                                 "--json",
                                 "--progress=none",
                                 "--threads=2",
                                 "--workers=" + std::to_string(workers),
                                 "--algo=" + algo,
                                 "--seed=" + seed};
  flags.insert(flags.end(), more.begin(), more.end());
  std::cout << "--algo=" << algo << " seed " << seed << std::endl;
  runs r;
  r.plain = last_json(troupe::test::run_train_main(flags));
  auto tag = name.empty() ? algo : name;
  auto dir = root() / tag;
  auto with = flags;
  with.push_back("--checkpoint-dir=" + dir.string());
  with.push_back("--checkpoint-every=40");
  with.push_back("--keep=100");
  auto full = last_json(troupe::test::run_train_main(with));
  auto steps = troupe::optim::checkpoint_steps(dir.string());
  INFO("checkpoints at " << nlohmann::json(steps).dump() << ": "
                         << full["checkpoints"].dump());
  REQUIRE(steps.size() >= 2);
  r.from = steps[steps.size() / 2];
  auto from = only(dir, r.from, "from-" + tag);
  char step[32];
  std::snprintf(step, sizeof step, "step-%012llu",
                static_cast<unsigned long long>(r.from));
  r.checkpoint = fs::path{from} / step;
  r.resumed = last_json(troupe::test::run_train_main(
      {"--resume=" + from, "--json", "--progress=none", "--threads=2"}));
  CHECK(r.resumed["resumed_from"]["steps"] == r.from);
  return r;
}

/// No example skipped or repeated within an epoch: each worker continues
/// its own examples where it paused; as good as the uninterrupted run.
void check_ledger_and_accuracy(const runs& r, double margin = 0.04) {
  const auto& plain = r.plain;
  const auto& resumed = r.resumed;
  INFO("resumed from step " << r.from);
  CHECK(resumed["steps"] == plain["steps"]);
  CHECK(resumed["samples"] == plain["samples"]);
  CHECK(resumed["step_ledger"]["planned"] == plain["step_ledger"]["planned"]);
  CHECK(resumed["step_ledger"]["done"] == plain["step_ledger"]["done"]);
  CHECK(resumed["step_ledger"]["lost"] == 0);
  REQUIRE(resumed["worker_stats"].size() == plain["worker_stats"].size());
  for (std::size_t w = 0; w < plain["worker_stats"].size(); ++w) {
    CHECK(resumed["worker_stats"][w]["steps"]
          == plain["worker_stats"][w]["steps"]);
    CHECK(resumed["worker_stats"][w]["samples"]
          == plain["worker_stats"][w]["samples"]);
  }
  // Asynchronous: not bit for bit, but as good (0.75-0.79 side by side).
  CHECK(resumed["test_accuracy"].get<double>()
        == Approx(plain["test_accuracy"].get<double>()).margin(margin));
}

/// ShadowSync's accuracy margin: its uninterrupted runs of one seed spread
/// over 0.757-0.773 (BMUF at a block momentum of 0.25, 6 runs of seed 37),
/// 0.762-0.775 (model averaging) and 0.764-0.768 (S-EASGD, seed 37, 5
/// runs each): two runs are compared within 0.04 as the others are.
constexpr double shadow_margin = 0.04;

} // namespace

TEST_CASE("a resumed EASGD run sees every example once per epoch and "
          "learns as much") {
  auto r = run_three("easgd", "31", {"--shards=2"});
  check_ledger_and_accuracy(r);
}

TEST_CASE("a resumed LSGD run keeps its leaders") {
  auto r = run_three("lsgd", "32", {});
  check_ledger_and_accuracy(r);
  // Every round triggered before the checkpoint is in the board's and the
  // groups' figures: the resumed run counts all the job's (the last one
  // may end with the job).
  auto all = lsgd_triggers(r.plain);
  auto resumed = lsgd_triggers(r.resumed);
  INFO("triggers: " << all << " uninterrupted, " << resumed << " resumed");
  CHECK(resumed <= all);
  CHECK(resumed + 1 >= all);
}

TEST_CASE("a resumed SGP run keeps its push-sum mass") {
  for (const std::string compress : {"none", "topk"}) {
    auto r = compress == "none"
                 ? run_three("sgp", "33", {})
                 : run_three("sgp", "34", {"--compress=" + compress});
    check_ledger_and_accuracy(r);
    // No share was lost in flight at the pause (the markers): the weights
    // still add up to one per worker.
    CHECK(r.resumed["sgp"]["weight_sum"].get<double>()
          == Approx(3.0).epsilon(1e-9));
  }
}

TEST_CASE("a resumed DS-Sync run sees every example once per epoch and "
          "learns as much") {
  // 4 workers in groups of 2 (the digit schedule), 36 steps each.
  auto r = run_three("dssync", "35", {}, 4);
  check_ledger_and_accuracy(r);
  for (const auto& w : r.resumed["worker_stats"]) {
    CHECK(w["mixes"] == 36);   // every round's mean, across the checkpoint
    CHECK(w["timeouts"] == 0); // no group member waited on a paused one
  }
  // DS-Sync is deterministic: the resumed run usually ends bit for bit
  // where the uninterrupted one does (printed, not asserted: see
  // durability.md).
  std::cout << "dssync param_hash " << r.plain["param_hash"] << " plain, "
            << r.resumed["param_hash"] << " resumed from step " << r.from
            << std::endl;
}

TEST_CASE("a resumed all-reduce run ends bit for bit, its error feedback "
          "too") {
  for (const std::string reducer : {"dense", "scalecom"}) {
    auto r = run_three("allreduce", reducer == "dense" ? "38" : "39",
                       {"--reducer=" + reducer}, 3, "allreduce-" + reducer);
    check_ledger_and_accuracy(r);
    // Synchronous and summed in ring order: the same bits.
    CHECK(r.resumed["param_hash"] == r.plain["param_hash"]);
  }
}

TEST_CASE("a resumed SSP run keeps its staleness bound and its examples") {
  // A worker waiting in its fetch for a slower one pauses there. Six
  // epochs at a learning rate of 0.1 (288 steps, a later flag overriding
  // run_three's): at run_three's 3 epochs and 0.2 the model is still
  // climbing steeply at the end, and the last step's accuracy alone spread
  // over 0.66-0.77 (40 runs of seed 36, resumed or not); here 12
  // uninterrupted runs spread over 0.788-0.796 and 21 resumed ones (from
  // each of 7 checkpoints) over 0.790-0.794.
  auto r = run_three(
      "downpour", "36",
      {"--shards=2", "--staleness-bound=1", "--epochs=6", "--lr=0.1"});
  check_ledger_and_accuracy(r);
  CHECK(r.resumed["staleness_bound"] == 1);
  CHECK(r.resumed["max_clock_gap"].get<std::uint64_t>() <= 1);
}

TEST_CASE("a resumed ShadowSync run sees every example once per epoch and "
          "learns as much; its syncers go on from a common round") {
  // BMUF over two syncers exchanging sums: the checkpoint is a cut after a
  // round both ended, and their replicated BMUF state is the same.
  // (A block momentum of 0.25: at the default 2/3 the uninterrupted runs
  // of this seed alone spread over 0.59-0.76.)
  auto r = run_three("shadow", "37",
                     {"--shadow=bmuf", "--groups=2", "--block-momentum=0.25"},
                     3, "shadow-bmuf");
  check_ledger_and_accuracy(r, shadow_margin);
  std::vector<troupe::algos::shadow_syncer_saved> saved;
  for (std::uint32_t g = 0; g < 2; ++g) {
    auto file = troupe::algos::shadow_syncer_file(g);
    saved.push_back(troupe::algos::decode_shadow_syncer(
        troupe::optim::read_whole_file((r.checkpoint / file).string()), file));
  }
  INFO("syncers saved at rounds " << saved[0].round << " and "
                                  << saved[1].round);
  CHECK(saved[0].round > 0);
  CHECK(saved[0].round == saved[1].round);
  CHECK(saved[0].rounds == saved[0].round); // no round in flight
  REQUIRE(saved[0].bmuf);
  REQUIRE(saved[1].bmuf);
  CHECK(saved[0].bmuf->start == saved[1].bmuf->start);
  // The syncers' counters carry on from the checkpoint's.
  const auto& syncers = r.resumed["shadow"]["syncers"];
  REQUIRE(syncers.size() == 2);
  for (const auto& s : syncers)
    CHECK(s["rounds"].get<std::uint64_t>() > saved[0].rounds);
  for (const auto& s : r.resumed["shadow"]["syncers"])
    CHECK(s["timeouts"] == 0);
  std::cout << "shadow bmuf: accuracy " << r.plain["test_accuracy"]
            << " plain, " << r.resumed["test_accuracy"] << " resumed from step "
            << r.from << " (syncers at round " << saved[0].round << ")"
            << std::endl;
}

TEST_CASE("a resumed S-EASGD run moves its center across the checkpoint") {
  // The syncer's pushes to the center carry its round as their sequence
  // number: a syncer restored at round 0 would have every push up to the
  // checkpoint's round dropped as a duplicate by the restored shards.
  auto r = run_three("shadow", "38", {"--shadow=easgd", "--shards=2"}, 3,
                     "shadow-easgd");
  check_ledger_and_accuracy(r, shadow_margin);
  REQUIRE(r.resumed["shard_stats"].size() == 2);
  for (const auto& s : r.resumed["shard_stats"]) {
    CHECK(s["duplicates"] == 0);
    CHECK(s["rejected"] == 0);
  }
  std::cout << "shadow easgd: accuracy " << r.plain["test_accuracy"]
            << " plain, " << r.resumed["test_accuracy"] << " resumed from step "
            << r.from << std::endl;
}
