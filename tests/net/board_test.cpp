// troupe board's view of a directory of reports (net/board.hpp): each run's
// status from its files (finished, failed, live, lost, unreadable), its
// curves from its CSV files, and nothing outside the directory's runs.

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "net/board.hpp"

namespace fs = std::filesystem;
using namespace troupe::net;

namespace {

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream{p} << text;
}

/// A finished run's files.
void finished(const fs::path& dir, const std::string& result) {
  write(dir / "result.json", result);
  write(dir / "train.csv", "seconds,steps,samples,loss,samples_per_sec\n"
                           "0.1,10,640,2,6400\n0.2,20,1280,1.5,6400\n");
  write(dir / "evaluations.csv",
        "seconds,steps,samples,accuracy,loss\n0.2,20,1280,0.75,0.9\n");
}

const nlohmann::json* find(const nlohmann::json& runs, const std::string& n) {
  for (const auto& r : runs["runs"])
    if (r["name"] == n)
      return &r;
  return nullptr;
}

} // namespace

TEST_CASE("a board lists each run under its directory with its status") {
  auto root = fs::path{TROUPE_BINARY_DIR} / "board_test";
  fs::remove_all(root);
  finished(root / "a",
           R"({"algo":"downpour","model":"mlp","test_accuracy":0.8,"lr":0.1})");
  finished(root / "b", R"({"algo":"sync","error":"a node was lost"})");
  write(root / "c" / live_file,
        "{\"algo\":\"easgd\",\"model\":\"logreg\",\"pid\":"
            + std::to_string(::getpid()) + ",\"monitor\":null}");
  // A process id no process has (beyond the kernel's pid_max).
  write(root / "d" / live_file, R"({"algo":"easgd","pid":2000000000})");
  write(root / "e" / "result.json", "{not json");
  write(root / "f" / "notes.txt", "not a run");
  run_board board{root.string()};
  auto runs = board.runs();
  INFO(runs.dump(1));
  REQUIRE(runs["runs"].size() == 5);
  auto a = find(runs, "a");
  REQUIRE(a);
  CHECK((*a)["status"] == "finished");
  CHECK((*a)["figures"]["test_accuracy"] == 0.8);
  CHECK((*a)["result"]["lr"] == 0.1); // an option
  CHECK((*find(runs, "b"))["status"] == "failed");
  CHECK((*find(runs, "b"))["error"] == "a node was lost");
  CHECK((*find(runs, "c"))["status"] == "live");
  CHECK((*find(runs, "c"))["figures"]["model"] == "logreg");
  CHECK((*find(runs, "d"))["status"] == "lost");
  CHECK((*find(runs, "e"))["status"] == "unreadable");
  CHECK_THAT((*find(runs, "e"))["error"].get<std::string>(),
             Catch::Contains("result.json"));
  CHECK(find(runs, "f") == nullptr);

  // A finished run's curves come from its CSV files.
  auto s = board.series("run=a");
  REQUIRE(s.status == 200);
  auto curves = nlohmann::json::parse(s.body);
  REQUIRE(curves["train"].size() == 2);
  CHECK(curves["train"][1]["loss"] == 1.5);
  CHECK(curves["evaluations"][0]["accuracy"] == 0.75);
  // A live run without --monitor has none yet; nothing outside the runs.
  CHECK(board.series("run=c").status == 404);
  for (const char* q :
       {"run=..", "run=../board_test/a", "run=%2e%2e", "", "run=f"})
    CHECK(board.series(q).status == 404);
  // The directory itself as a run: "." when it holds a report.
  finished(root / "a" / "inner", R"({"algo":"sgd"})");
  run_board single{(root / "a").string()};
  auto one = single.runs();
  REQUIRE(one["runs"].size() == 2);
  CHECK(one["runs"][0]["name"] == ".");
  fs::remove_all(root);
}

TEST_CASE("a malformed or oversized curve file is refused, naming it") {
  auto root = fs::path{TROUPE_BINARY_DIR} / "board_csv_test";
  fs::remove_all(root);
  write(root / "bad.csv", "seconds,loss\n0.1,2\n0.2,abc\n");
  CHECK_THROWS_WITH(read_csv_rows((root / "bad.csv").string()),
                    Catch::Contains("bad.csv: line 3"));
  write(root / "short.csv", "seconds,loss\n0.1\n");
  CHECK_THROWS_WITH(read_csv_rows((root / "short.csv").string()),
                    Catch::Contains("line 2"));
  write(root / "big.csv", "seconds\n" + std::string(2000, '1') + "\n");
  CHECK_THROWS_WITH(read_csv_rows((root / "big.csv").string(), 1000),
                    Catch::Contains("more than the 1000"));
  fs::remove_all(root);
}
