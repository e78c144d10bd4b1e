// A worker's examples ceded to a node joining the running job
// (batch_iterator::cede, replica::cede_examples): within the epoch under
// way no example is skipped or drawn twice by the donor and the newcomer
// together, and from the next epoch on each owns its own.

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

#include "optim/dataset.hpp"
#include "optim/replica.hpp"
#include "optim/synthetic.hpp"

using namespace troupe::optim;

namespace {

std::vector<std::size_t> iota(std::size_t first, std::size_t n) {
  std::vector<std::size_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

std::vector<std::size_t> sorted(std::vector<std::size_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

/// Draws batches until `it` starts its next epoch; returns what it drew.
std::vector<std::size_t> rest_of_epoch(batch_iterator& it) {
  std::vector<std::size_t> out;
  auto epoch = it.epoch();
  while (it.epoch() == epoch) {
    const auto& b = it.next_indices();
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

} // namespace

TEST_CASE("ceded examples come from those not drawn yet: the epoch under way "
          "covers each example once, donor and newcomer together") {
  for (std::uint64_t seed : {3u, 11u, 29u}) {
    std::cout << "cede: seed " << seed << std::endl;
    INFO("seed " << seed);
    const auto all = iota(100, 200); // examples 100..299
    batch_iterator donor{all, 16, seed};
    std::vector<std::size_t> drawn;
    for (int b = 0; b < 5; ++b) { // 80 drawn, 120 left this epoch
      const auto& x = donor.next_indices();
      drawn.insert(drawn.end(), x.begin(), x.end());
    }
    REQUIRE(donor.undrawn() == 120);
    auto ceded = donor.cede(50);
    REQUIRE(ceded.size() == 50);
    CHECK(donor.size() == 150);
    CHECK(donor.undrawn() == 70);
    // None of them drawn already.
    for (auto i : ceded)
      CHECK(std::find(drawn.begin(), drawn.end(), i) == drawn.end());
    // The newcomer starts an epoch over them; the donor finishes its own.
    batch_iterator newcomer{ceded, 16, seed + 1};
    auto rest = rest_of_epoch(donor);
    auto theirs = rest_of_epoch(newcomer);
    CHECK(rest.size() == 70);
    std::vector<std::size_t> epoch = drawn;
    epoch.insert(epoch.end(), rest.begin(), rest.end());
    epoch.insert(epoch.end(), theirs.begin(), theirs.end());
    CHECK(sorted(epoch) == all); // each example exactly once
    // The next epochs: the donor's 150 and the newcomer's 50, disjoint.
    auto next = rest_of_epoch(donor);
    CHECK(next.size() == 150);
    auto mine = sorted(next), gone = sorted(ceded);
    std::vector<std::size_t> both;
    std::set_intersection(mine.begin(), mine.end(), gone.begin(), gone.end(),
                          std::back_inserter(both));
    CHECK(both.empty());
  }
}

TEST_CASE("a cede keeps the epoch under way going: at most all but one of "
          "the undrawn examples go") {
  batch_iterator it{iota(0, 40), 8, 5};
  for (int b = 0; b < 4; ++b) // 32 drawn, 8 left
    it.next_indices();
  auto ceded = it.cede(100);
  CHECK(ceded.size() == 7);
  CHECK(it.undrawn() == 1);
  CHECK(it.next_indices().size() == 1);
  CHECK(it.epoch() == 1);
  CHECK(it.size() == 33);
  CHECK(it.cede(0).empty());
}

TEST_CASE("replica::cede_examples gives num/den of the worker's examples, "
          "among the undrawn ones") {
  lsq_options o;
  o.m = 256;
  o.d = 4;
  o.seed = 7;
  auto p = std::make_shared<const lsq_problem>(make_lsq(o));
  synthetic_replica<lsq_problem> r{p, iota(0, 200), 10, 9};
  // At the start of an epoch: a third of 200 examples.
  CHECK(r.cede_examples(1, 3).size() == 66);
  // Late in the epoch only the undrawn ones, all but one.
  for (int s = 0; s < 12; ++s) // 120 of 134 drawn
    r.compute();
  CHECK(r.cede_examples(1, 2).size() == 13);
  CHECK_THROWS_AS(r.cede_examples(2, 2), std::invalid_argument);
}
