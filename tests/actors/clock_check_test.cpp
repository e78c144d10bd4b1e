// Actors read the time through their actor system's clock (actors/clock.hpp),
// so that a simulator's virtual clock controls it: no source under actors/ or
// algos/ reads the wall clock or sleeps directly. Allowed: actors/clock.cpp
// (the process's clocks behind actors::now, spend and unix_ms) and
// actors/detail/log.cpp (the log's rate limit, logging only).

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace fs = std::filesystem;

namespace {

/// The direct reads of a clock and the sleeps. The last one also catches a
/// clock read through an alias (`using clock = std::chrono::steady_clock`).
const std::regex& forbidden() {
  static const std::regex re{
      R"(steady_clock::now|system_clock::now|high_resolution_clock)"
      R"(|sleep_for|sleep_until|this_thread|std::time\(|gettimeofday)"
      R"(|clock_gettime|\b\w*clock\w*::now\b)"};
  return re;
}

const std::vector<std::string> allowed{"actors/clock.cpp",
                                       "actors/detail/log.cpp"};

/// The 1-based numbers of the lines of `text` that read a clock or sleep.
std::vector<int> violations(std::istream& text) {
  std::vector<int> out;
  std::string line;
  for (int n = 1; std::getline(text, line); ++n)
    if (std::regex_search(line, forbidden()))
      out.push_back(n);
  return out;
}

std::vector<int> violations(const std::string& text) {
  std::istringstream in{text};
  return violations(in);
}

} // namespace

TEST_CASE("the clock check finds every direct read of a clock and sleep") {
  for (const char* bad : {
           "auto t = std::chrono::steady_clock::now();",
           "auto t = std::chrono::system_clock::now();",
           "std::chrono::high_resolution_clock::time_point t;",
           "std::this_thread::sleep_for(d);",
           "std::this_thread::sleep_until(t);",
           "using namespace std::this_thread;",
           "sleep_for(std::chrono::seconds{1});",
           "auto s = std::time(nullptr);",
           "gettimeofday(&tv, nullptr);",
           "clock_gettime(CLOCK_MONOTONIC, &ts);",
           "auto t = clock_type::now();",
           "auto t = actor_probe::clock::now();",
       }) {
    INFO(bad);
    CHECK(violations(std::string{"int x;\n"} + bad + "\n")
          == std::vector<int>{2});
  }
  for (const char* good : {
           "auto t = actors::now(self);",
           "auto t = self->clock().now();",
           "actors::spend(self, config.step_delay);",
           "std::uint64_t clock() const noexcept override;",
           "f.clock = ctx.clock();",
           "using clock = clock_type;",
       }) {
    INFO(good);
    CHECK(violations(std::string{good}).empty());
  }
}

TEST_CASE("no actor reads the wall clock or sleeps directly") {
  fs::path root{TROUPE_SOURCE_DIR};
  std::vector<std::string> hits;
  std::size_t files = 0;
  for (const char* folder : {"actors", "algos"})
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      auto ext = entry.path().extension();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp"))
        continue;
      auto name = fs::relative(entry.path(), root).generic_string();
      if (std::find(allowed.begin(), allowed.end(), name) != allowed.end())
        continue;
      ++files;
      std::ifstream in{entry.path()};
      for (int n : violations(in))
        hits.push_back(name + ":" + std::to_string(n));
    }
  CHECK(files > 100);
  for (const auto& h : hits)
    UNSCOPED_INFO(h << ": read the time with actors::now(self) or "
                       "seconds_since(self, t0), spend time with "
                       "actors::spend(self, d) (actors/clock.hpp)");
  CHECK(hits.empty());
}
