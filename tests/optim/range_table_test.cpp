#include <stdexcept>
#include <string>

#include <catch2/catch.hpp>

#include "optim/range_table.hpp"

using namespace troupe::optim;

TEST_CASE("range_table appends ranges back to back") {
  range_table t;
  CHECK(t.total() == 0);
  CHECK(t.add("fc1.weight", 12, range_kind::weight) == 0);
  CHECK(t.add("fc1.bias", 3, range_kind::bias) == 12);
  CHECK(t.add("fc2.weight", 6, range_kind::weight) == 15);
  CHECK(t.total() == 21);
  REQUIRE(t.ranges().size() == 3);
  CHECK(t.ranges()[1].name == "fc1.bias");
  CHECK(t.ranges()[1].offset == 12);
  CHECK(t.ranges()[1].size == 3);
  CHECK(t.ranges()[1].kind == range_kind::bias);
  auto r = t.find("fc2.weight");
  REQUIRE(r);
  CHECK(r->offset == 15);
  CHECK(r->size == 6);
  CHECK(r->kind == range_kind::weight);
  CHECK_FALSE(t.find("fc2.bias"));
  CHECK_FALSE(t.find("fc1"));
}

TEST_CASE("range_table rejects duplicate names") {
  range_table t;
  t.add("a", 1, range_kind::weight);
  CHECK_THROWS_WITH(t.add("a", 2, range_kind::bias),
                    Catch::Matchers::Contains("duplicate")
                        && Catch::Matchers::Contains("'a'"));
  CHECK(t.total() == 1);
  CHECK(t.ranges().size() == 1);
}

TEST_CASE("range_kind names") {
  CHECK(std::string{to_string(range_kind::weight)} == "weight");
  CHECK(std::string{to_string(range_kind::bias)} == "bias");
}

TEST_CASE("balanced_split covers the vector with near-equal slices") {
  range_table t;
  t.add("w", 1000, range_kind::weight);
  t.add("b", 3, range_kind::bias);
  for (std::size_t k : {1u, 2u, 3u, 7u, 64u, 1003u}) {
    INFO("k = " << k);
    const auto slices = t.balanced_split(k);
    REQUIRE(slices.size() == k);
    std::size_t offset = 0;
    std::size_t lo = t.total();
    std::size_t hi = 0;
    for (const auto& s : slices) {
      CHECK(s.offset == offset); // contiguous, in order
      offset += s.size;
      lo = std::min(lo, s.size);
      hi = std::max(hi, s.size);
    }
    CHECK(offset == t.total());
    CHECK(hi - lo <= 1);
    CHECK(lo >= 1);
    // The larger slices come first.
    for (std::size_t i = 1; i < k; ++i)
      CHECK(slices[i].size <= slices[i - 1].size);
  }
  CHECK(t.balanced_split(2)[0].size == 502);
  CHECK(t.balanced_split(2)[1].size == 501);
}

TEST_CASE("balanced_split rejects k outside [1, total]") {
  range_table t;
  t.add("w", 5, range_kind::weight);
  CHECK_THROWS_AS(t.balanced_split(0), std::invalid_argument);
  CHECK_THROWS_AS(t.balanced_split(6), std::invalid_argument);
  CHECK_NOTHROW(t.balanced_split(5));
  range_table empty;
  CHECK_THROWS_AS(empty.balanced_split(1), std::invalid_argument);
}
