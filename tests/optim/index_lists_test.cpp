// batch_iterators that hold the same examples share one list and one order
// per epoch (optim/detail/index_lists.hpp): the batches are bit-equal to
// those of an iterator computing its own, a thousand iterators over the
// same examples hold one list and at most two orders, and one that changes
// its examples (cede, add_indices) leaves the others' batches as they were.

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

#include "optim/dataset.hpp"
#include "optim/rng.hpp"

using namespace troupe::optim;

namespace {

constexpr std::uint64_t seed = 11;

std::vector<std::size_t> examples(std::size_t n) {
  std::vector<std::size_t> v(n);
  std::iota(v.begin(), v.end(), std::size_t{100});
  return v;
}

/// Epoch e's order as batch_iterator's documentation defines it (a
/// Fisher-Yates shuffle of the indices driven by rng{seed ^ (e+1)·φ}).
std::vector<std::size_t> reference_order(std::vector<std::size_t> xs,
                                         std::uint64_t epoch) {
  rng gen{seed ^ ((epoch + 1) * 0x9E3779B97F4A7C15ull)};
  for (std::size_t i = xs.size(); i > 1; --i)
    std::swap(xs[i - 1], xs[static_cast<std::size_t>(gen.below(i))]);
  return xs;
}

/// Part `rank` of `world` of the global batches of `epoch`.
std::vector<std::vector<std::size_t>>
reference_batches(const std::vector<std::size_t>& xs, std::uint64_t epoch,
                  std::size_t batch, batch_part part) {
  auto order = reference_order(xs, epoch);
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t pos = 0; order.size() - pos >= part.world;) {
    auto global = std::min(batch * part.world, order.size() - pos);
    auto first = pos + global * part.rank / part.world;
    auto last = pos + global * (part.rank + 1) / part.world;
    out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(first),
                     order.begin() + static_cast<std::ptrdiff_t>(last));
    pos += global;
  }
  return out;
}

} // namespace

TEST_CASE("iterators over the same examples draw the reference batches from "
          "one shared list and order") {
  std::cout << "seed " << seed << "\n";
  auto before = detail::live_index_lists();
  const std::size_t n = 1000, world = 1000, batch = 2, size = 10000;
  auto xs = examples(size);
  std::vector<std::unique_ptr<batch_iterator>> its;
  for (std::size_t r = 0; r < n; ++r)
    its.push_back(std::make_unique<batch_iterator>(xs, batch, seed,
                                                   batch_part{r, world}));
  // One list, epoch 0's order.
  CHECK(detail::live_index_lists() - before == 2);
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    auto steps = its[0]->batches_per_epoch();
    for (std::size_t r : {std::size_t{0}, std::size_t{1}, n - 1}) {
      auto want = reference_batches(xs, epoch, batch, batch_part{r, world});
      REQUIRE(want.size() == steps);
    }
    for (std::size_t s = 0; s < steps; ++s)
      for (std::size_t r = 0; r < n; ++r) {
        const auto& got = its[r]->next_indices();
        if (r == 0 || r == 1 || r == n - 1) {
          auto want = reference_batches(xs, epoch, batch, batch_part{r, world});
          REQUIRE(got == want[s]);
        }
        // Mid-epoch change-over: some on the next epoch, some not yet.
        REQUIRE(detail::live_index_lists() - before <= 3);
      }
    CHECK(its[0]->epoch() == epoch + 1);
  }
  its.clear();
  CHECK(detail::live_index_lists() == before);
}

TEST_CASE("an iterator that cedes or adds examples changes its own copy only") {
  std::cout << "seed " << seed << "\n";
  auto xs = examples(50);
  batch_iterator a{xs, 4, seed}, b{xs, 4, seed}, c{xs, 4, seed};
  auto want = reference_batches(xs, 0, 4, {});
  CHECK(a.next_indices() == want[0]);
  CHECK(b.next_indices() == want[0]);
  CHECK(c.next_indices() == want[0]);
  auto gone = a.cede(10);
  REQUIRE(gone.size() == 10);
  c.add_indices({7, 8, 9});
  CHECK(a.size() == 40);
  CHECK(c.size() == 53);
  for (std::size_t s = 1; s < want.size(); ++s)
    REQUIRE(b.next_indices() == want[s]);
  CHECK(b.epoch() == 1);
  CHECK(b.next_indices() == reference_batches(xs, 1, 4, {})[0]);
  // The donor's next epoch is over its remaining examples alone.
  while (a.epoch() == 0)
    a.next_indices();
  std::vector<std::size_t> left;
  for (auto i : xs)
    if (std::find(gone.begin(), gone.end(), i) == gone.end())
      left.push_back(i);
  CHECK(a.next_indices() == reference_batches(left, 1, 4, {})[0]);
}
