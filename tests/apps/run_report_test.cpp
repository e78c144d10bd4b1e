// --report=DIR: a finished run's curves as CSV and SVG, and its result.

#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "apps/cli.hpp"
#include "apps/run_report.hpp"
#include "apps/svg_plot.hpp"
#include "capture.hpp"

namespace fs = std::filesystem;
using namespace troupe::apps;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in{p};
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

TEST_CASE("a report has the curves as CSV, an SVG plot and the result") {
  auto dir = fs::path{TROUPE_BINARY_DIR} / "run_report_test";
  fs::remove_all(dir);
  nlohmann::json series{{"train",
                         {{{"seconds", 0.1},
                           {"steps", 10},
                           {"samples", 640},
                           {"loss", 2.0},
                           {"samples_per_sec", 6400.0}},
                          {{"seconds", 0.2},
                           {"steps", 20},
                           {"samples", 1280},
                           {"loss", 1.5},
                           {"samples_per_sec", 6400.0}}}},
                        {"evaluations",
                         {{{"seconds", 0.2},
                           {"steps", 20},
                           {"samples", 1280},
                           {"accuracy", 0.75},
                           {"loss", 0.9}}}}};
  nlohmann::json result{{"test_accuracy", 0.75}};
  check_report_dir(dir.string());
  write_report(dir.string(), series, result);
  CHECK(slurp(dir / "train.csv")
        == "seconds,steps,samples,bytes,loss,samples_per_sec\n"
           "0.1,10,640,0,2,6400\n0.2,20,1280,0,1.5,6400\n");
  CHECK(
      slurp(dir / "evaluations.csv")
      == "seconds,steps,samples,bytes,accuracy,loss\n0.2,20,1280,0,0.75,0.9\n");
  CHECK(nlohmann::json::parse(slurp(dir / "result.json")) == result);
  auto svg = slurp(dir / "curves.svg");
  CHECK_THAT(svg, Catch::StartsWith("<svg xmlns='http://www.w3.org/2000/svg'"));
  // The loss falls from the plot area's top-left corner to its bottom-right
  // one: its axes run over round ticks that just cover the data (0.10 ..
  // 0.20 s, 1.5 .. 2.0), here exactly its range.
  auto a = area_of(plot{});
  std::ostringstream corners;
  corners << "points='" << a.left << ',' << a.top << ' ' << a.left + a.width
          << ',' << a.top + a.height << " '";
  CHECK_THAT(svg, Catch::Contains(corners.str()));
  for (const char* tick : {">0.10<", ">0.20<", ">1.5<", ">2.0<", ">time (s)<"})
    CHECK_THAT(svg, Catch::Contains(tick));
  // One evaluation is still a chart: a dot, its values on hover.
  CHECK_THAT(svg, Catch::Contains("Test accuracy"));
  CHECK_THAT(svg, Catch::Contains("<title>test accuracy: time (s) 0.2, "
                                  "accuracy 0.75</title>"));
  auto index = slurp(dir / "index.html");
  CHECK_THAT(index, Catch::Contains("<svg")); // inline: no server needed
  CHECK_THAT(index, Catch::Contains("<th>test_accuracy</th><td>0.75</td>"));
  CHECK(fs::exists(dir / "throughput.svg"));
}

// sgd runs in one loop without actors: the loop feeds the recorder its
// steps and evaluations, so its report is the same as an actor job's.
TEST_CASE("sgd (one loop, no actors) writes a report of its run") {
  auto dir = fs::path{TROUPE_BINARY_DIR} / "run_report_sgd";
  fs::remove_all(dir);
  auto r = troupe::test::run_train_main(
      {"--algo=sgd", "--model=logreg", "--train-examples=2000", "--epochs=3",
       "--seed=3", "--progress=none", "--json", "--report=" + dir.string()});
  INFO(r.err);
  REQUIRE(r.status == 0);
  auto result = nlohmann::json::parse(slurp(dir / "result.json"));
  auto evaluations = result["evaluations"].size();
  REQUIRE(evaluations >= 2);
  // One line of evaluations.csv per evaluation of the run, the last one at
  // its last step; the training curve has points up to there.
  std::istringstream evals{slurp(dir / "evaluations.csv")};
  std::string line, last;
  std::size_t rows = 0;
  std::getline(evals, line); // the header
  while (std::getline(evals, line))
    ++rows, last = line;
  CHECK(rows == evaluations);
  auto steps = result["steps"].get<std::uint64_t>();
  CHECK_THAT(last, Catch::Contains("," + std::to_string(steps) + ","));
  std::istringstream train{slurp(dir / "train.csv")};
  rows = 0;
  while (std::getline(train, line))
    ++rows;
  CHECK(rows >= 3);
  CHECK(fs::exists(dir / "curves.svg"));
}

TEST_CASE("a report directory that cannot be written is refused up front") {
  CHECK_THROWS_AS(check_report_dir("/proc/troupe-no/such"), usage_error);
}

TEST_CASE("a report's CSV keeps counts exact and reals to 9 digits") {
  auto dir = fs::path{TROUPE_BINARY_DIR} / "run_report_csv_test";
  fs::remove_all(dir);
  // A double's default 6 digits printed 1234567 samples as 1.23457e+06.
  nlohmann::json series{{"train",
                         {{{"seconds", 12345.678901},
                           {"steps", 30},
                           {"samples", 1234567},
                           {"bytes", 123456789999},
                           {"loss", 0.123456789012},
                           {"samples_per_sec", 100.0}}}},
                        {"evaluations", nlohmann::json::array()}};
  check_report_dir(dir.string());
  write_report(dir.string(), series, nlohmann::json{{"test_accuracy", 0.5}});
  CHECK(slurp(dir / "train.csv")
        == "seconds,steps,samples,bytes,loss,samples_per_sec\n"
           "12345.6789,30,1234567,123456789999,0.123456789,100\n");
}
