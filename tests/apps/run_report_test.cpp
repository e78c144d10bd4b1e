// --report=DIR: a finished run's curves as CSV and SVG, and its result.

#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "apps/cli.hpp"
#include "apps/run_report.hpp"

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
        == "seconds,steps,samples,loss,samples_per_sec\n"
           "0.1,10,640,2,6400\n0.2,20,1280,1.5,6400\n");
  CHECK(slurp(dir / "evaluations.csv")
        == "seconds,steps,samples,accuracy,loss\n0.2,20,1280,0.75,0.9\n");
  CHECK(nlohmann::json::parse(slurp(dir / "result.json")) == result);
  auto svg = slurp(dir / "curves.svg");
  CHECK_THAT(svg, Catch::StartsWith("<svg xmlns='http://www.w3.org/2000/svg'"));
  // The loss falls from the top-left corner to the bottom-right one.
  CHECK_THAT(svg, Catch::Contains("points='20,40 400,260 '"));
  CHECK_THAT(svg, Catch::Contains("test accuracy"));
}

TEST_CASE("a report directory that cannot be written is refused up front") {
  CHECK_THROWS_AS(check_report_dir("/proc/troupe-no/such"), usage_error);
}
