// The algorithm seam holds (issue [10]): the shared roles, the CLI and the
// network layer never compare an algorithm's name; algos/ never reaches
// up into apps/ or net/; every registered algorithm answers to its name.

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "algos/registry.hpp"

namespace fs = std::filesystem;
using namespace troupe;

namespace {

/// Every line of the C++ sources under `folder` (relative to the source
/// tree) matching `pattern`, as "file:line: text".
std::vector<std::string> grep(const std::string& folder,
                              const std::regex& pattern) {
  std::vector<std::string> hits;
  fs::path root{TROUPE_SOURCE_DIR};
  for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
    auto ext = entry.path().extension();
    if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp"))
      continue;
    std::ifstream in{entry.path()};
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      if (std::regex_search(line, pattern))
        hits.push_back(fs::relative(entry.path(), root).string() + ":"
                       + std::to_string(n) + ": " + line);
  }
  return hits;
}

} // namespace

TEST_CASE("no algorithm name is compared outside algos/") {
  std::string names;
  for (const auto& e : algos::registered_algorithms())
    names += (names.empty() ? "" : "|") + e.name;
  std::regex compared{"(==|!=) *\"(" + names + ")\"|\"(" + names
                      + ")\" *(==|!=)"};
  for (const char* folder : {"actors", "apps", "net"}) {
    auto hits = grep(folder, compared);
    INFO(folder);
    for (const auto& h : hits)
      UNSCOPED_INFO(h);
    CHECK(hits.empty());
  }
}

TEST_CASE("algos/ depends on actors/ and below only") {
  auto hits = grep("algos", std::regex{"#include \"(apps|net)/"});
  for (const auto& h : hits)
    UNSCOPED_INFO(h);
  CHECK(hits.empty());
}

TEST_CASE("every registered algorithm answers to its name") {
  auto entries = algos::registered_algorithms();
  REQUIRE(entries.size() >= 9);
  for (const auto& e : entries) {
    auto a = e.make();
    INFO(e.name);
    CHECK(a->name() == e.name);
    CHECK_FALSE(a->summary().empty());
    CHECK(a->clone()->name() == e.name);
  }
  try {
    algos::make_algorithm("allreduce");
    FAIL("an unknown algorithm was made");
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    CHECK(what.find("'allreduce'") != std::string::npos);
    CHECK(what.find("downpour") != std::string::npos);
  }
}
