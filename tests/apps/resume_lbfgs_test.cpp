// Checkpoints and --resume of Sandblaster L-BFGS (issue [11]): its driver
// writes checkpoints at iteration boundaries (the shards' slices and
// history pairs, its own scalars); a run resumed from one, whether written
// on schedule or at a SIGINT, ends with the uninterrupted run's parameters
// bit for bit (param_hash), the same iterations, passes, samples, objective
// and trace; a damaged latest checkpoint falls back to the one before, and a
// checkpoint whose files do not fit is refused naming the file.

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <pthread.h>
#include <thread>

#include <catch2/catch.hpp>

#include "checkpoint_runs.hpp"
#include "optim/atomic_file.hpp"
#include "optim/checkpoint_dir.hpp"

namespace fs = std::filesystem;
using troupe::test::last_json;
using troupe::test::run_result;

namespace {

run_result train(std::vector<std::string> args) {
  return troupe::test::run_train_main(std::move(args));
}

fs::path root() {
  static troupe::test::scratch_dir d{"resume_lbfgs_test"};
  return d.path();
}

/// A directory holding only checkpoint `step` of `from`.
std::string only(const fs::path& from, std::uint64_t step,
                 const std::string& name) {
  return troupe::test::only_checkpoint(root(), from, step, name);
}

/// 16 iterations of L-BFGS on an MLP (non-convex, 2 shards, 2 workers, 4
/// portions of 128 examples): about 40 ms an iteration here.
std::vector<std::string> job(const std::string& seed) {
  return {"--algo=lbfgs",    "--model=mlp",   "--train-examples=512",
          "--portions=4",    "--workers=2",   "--shards=2",
          "--max-steps=16",  "--threads=2",   "--json",
          "--progress=none", "--seed=" + seed};
}

/// The uninterrupted run of job("3"), once for every test case.
const nlohmann::json& plain_run() {
  static const nlohmann::json plain = [] {
    std::cout << "lbfgs resume: seed 3" << std::endl;
    return last_json(train(job("3")));
  }();
  return plain;
}

std::vector<std::string> with(std::vector<std::string> args,
                              std::initializer_list<std::string> more) {
  args.insert(args.end(), more);
  return args;
}

/// The resumed run ends where the uninterrupted one does, bit for bit.
void same_end(const nlohmann::json& resumed, const nlohmann::json& plain) {
  CHECK(resumed["param_hash"] == plain["param_hash"]);
  CHECK(resumed["objective"] == plain["objective"]);
  CHECK(resumed["iterations"] == plain["iterations"]);
  CHECK(resumed["passes"] == plain["passes"]);
  CHECK(resumed["samples"] == plain["samples"]);
  CHECK(resumed["test_accuracy"] == plain["test_accuracy"]);
  CHECK(resumed["stop_reason"] == plain["stop_reason"]);
  REQUIRE(resumed["trace"].size() == plain["trace"].size());
  for (std::size_t i = 0; i < plain["trace"].size(); ++i) {
    CHECK(resumed["trace"][i]["f"] == plain["trace"][i]["f"]);
    CHECK(resumed["trace"][i]["passes"] == plain["trace"][i]["passes"]);
  }
}

/// SIGINT (to the process, taken by train_main's signal watch) 40 ms (about
/// an iteration) after `dir` holds a checkpoint of step `after`, unless
/// `over` is set first.
void interrupt_after(const fs::path& dir, std::uint64_t after,
                     const std::atomic<bool>& over) {
  while (!over) {
    std::error_code ec;
    if (fs::exists(dir, ec)) {
      auto steps = troupe::optim::checkpoint_steps(dir.string());
      if (!steps.empty() && steps.back() >= after) {
        std::this_thread::sleep_for(std::chrono::milliseconds{40});
        ::kill(::getpid(), SIGINT);
        return;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
}

} // namespace

TEST_CASE("a resumed lbfgs run ends bit for bit where the uninterrupted one "
          "does") {
  const auto& plain = plain_run();
  REQUIRE(plain["iterations"] == 16);
  auto dir = root() / "full";
  auto full = last_json(
      train(with(job("3"), {"--checkpoint-dir=" + dir.string(),
                            "--checkpoint-every=4", "--keep=100"})));
  // Checkpointing changes nothing computed.
  CHECK(full["param_hash"] == plain["param_hash"]);
  CHECK(full["checkpoints"].size() == 4);
  CHECK(troupe::optim::checkpoint_steps(dir.string())
        == std::vector<std::uint64_t>{4, 8, 12, 16});
  for (std::uint64_t step : {4, 12}) {
    INFO("resumed from iteration " << step);
    auto from = only(dir, step, "from-" + std::to_string(step));
    auto resumed
        = last_json(train({"--resume=" + from, "--json", "--progress=none"}));
    CHECK(resumed["resumed_from"]["steps"] == step);
    same_end(resumed, plain);
  }
  // A given flag that changes the job is refused, naming it.
  auto r = train({"--resume=" + dir.string(), "--algo=lbfgs", "--memory=5"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("is of another job")
                        && Catch::Contains("--memory=5 here"));
}

TEST_CASE("an lbfgs run interrupted by SIGINT checkpoints and resumes bit for "
          "bit") {
  const auto& plain = plain_run();
  // SIGINT blocked in this thread and so in every thread started from now
  // on: the signal waits for train_main's watch (sigtimedwait).
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  nlohmann::json stopped;
  fs::path dir;
  // The signal comes after the scheduled checkpoint of iteration 7, within
  // the next iteration or so; a run that ended before it arrived (a loaded
  // machine) is tried again.
  for (int attempt = 0; attempt < 3; ++attempt) {
    dir = root() / ("sigint-" + std::to_string(attempt));
    std::atomic<bool> over{false};
    std::thread signaller{[&] { interrupt_after(dir, 7, over); }};
    auto r = train(with(job("3"), {"--checkpoint-dir=" + dir.string(),
                                   "--checkpoint-every=7", "--keep=100"}));
    over = true;
    signaller.join();
    timespec zero{0, 0};
    while (sigtimedwait(&set, nullptr, &zero) > 0) {
    } // one sent after the run's watch ended
    INFO(r.err);
    std::cout << "  attempt " << attempt << ": status " << r.status
              << std::endl;
    if (r.status == 128 + SIGINT) {
      stopped = nlohmann::json::parse(r.out.substr(r.out.rfind("\n{") + 1));
      break;
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  REQUIRE(stopped.is_object());
  CHECK(stopped["stop_reason"] == "interrupted (SIGINT)");
  auto at = stopped["iterations"].get<std::uint64_t>();
  std::cout << "  interrupted at iteration " << at << std::endl;
  CHECK(at >= 7);
  CHECK(at < 16);
  // The stop's checkpoint is the latest: at the iteration the run ended
  // (written by the stop unless that was a scheduled one).
  auto steps = troupe::optim::checkpoint_steps(dir.string());
  REQUIRE(!steps.empty());
  CHECK(steps.back() == at);
  if (at % 7 != 0)
    CHECK(steps == std::vector<std::uint64_t>{7, at});
  else
    WARN("the stop came at the scheduled checkpoint of iteration " << at);
  CHECK(stopped["checkpoints"].back()["steps"] == at);
  auto resumed = last_json(
      train({"--resume=" + dir.string(), "--json", "--progress=none"}));
  CHECK(resumed["resumed_from"]["steps"] == at);
  same_end(resumed, plain);
}

TEST_CASE("a damaged latest lbfgs checkpoint falls back to the one before; "
          "one that does not fit is refused naming the file") {
  const auto& plain = plain_run();
  auto dir = root() / "damaged";
  last_json(train(with(
      job("3"), {"--checkpoint-dir=" + dir.string(), "--checkpoint-every=5"})));
  // 5, 10 and 15 written (the run ends at 16, normally: no checkpoint).
  REQUIRE(troupe::optim::checkpoint_steps(dir.string())
          == std::vector<std::uint64_t>{5, 10, 15});
  auto state = dir / "step-000000000015" / "shard-1.state";
  auto bytes = troupe::optim::read_whole_file(state.string());
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 4);
  std::ofstream{state, std::ios::binary | std::ios::trunc} << bytes;
  // Kept apart: the resumed run checkpoints into `dir` again.
  auto broken = only(dir, 15, "broken");
  auto resumed = last_json(
      train({"--resume=" + dir.string(), "--json", "--progress=none"}));
  CHECK(resumed["resumed_from"]["steps"] == 10);
  same_end(resumed, plain);

  // Every checkpoint damaged: refused, naming the file.
  auto r = train({"--resume=" + broken, "--json", "--progress=none"});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Contains("no complete checkpoint")
                        && Catch::Contains("shard-1.state: CRC-32"));

  // Whole files that are not this shard's (each shard's file in the other's
  // place, the manifest rewritten to match): the run ends naming the file.
  auto ck = troupe::optim::latest_checkpoint(only(dir, 10, "ten"));
  REQUIRE(ck);
  troupe::optim::checkpoint_content swapped;
  swapped.step = ck->step;
  swapped.job = ck->job;
  swapped.info = ck->info;
  swapped.files = ck->files;
  std::swap(swapped.files["shard-0.state"], swapped.files["shard-1.state"]);
  auto other = root() / "swapped";
  troupe::optim::write_checkpoint(other.string(), swapped, 1);
  r = train({"--resume=" + other.string(), "--json", "--progress=none"});
  INFO(r.err);
  CHECK(r.status == 1);
  // (Whichever shard answers first is named.)
  CHECK_THAT(r.err,
             Catch::Contains("cannot resume from " + other.string())
                 && (Catch::Contains("shard-0.state: tensor 'index' is 1 in "
                                     "the file, 0 here")
                     || Catch::Contains("shard-1.state: tensor 'index' is 0 "
                                        "in the file, 1 here")));
}
