// Sandblaster's portion table (algorithms.md §2, T2): every portion counts
// exactly once whatever the order, the slow workers, the backup copies and
// the lost workers; backups only once the pool is empty; affinity.

#include <iostream>
#include <map>

#include <catch2/catch.hpp>

#include "optim/portions.hpp"
#include "optim/rng.hpp"

using troupe::optim::portion_table;
using troupe::optim::rng;

TEST_CASE("T2: each portion counts exactly once under random schedules "
          "with slow workers, backups and lost workers") {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    INFO("seed " << seed);
    rng gen{seed};
    const std::size_t portions = 64;
    const std::uint32_t workers = 6;
    portion_table t{portions};
    std::vector<std::optional<std::size_t>> busy(workers);
    std::vector<bool> alive(workers, true);
    std::vector<int> counted(portions, 0);
    std::uint32_t lost = 0;
    for (int tick = 0; tick < 100000 && !t.done(); ++tick) {
      auto w = static_cast<std::uint32_t>(gen.next() % workers);
      if (!alive[w])
        continue;
      if (!busy[w]) {
        busy[w] = t.assign(w);
        continue;
      }
      // Worker 0 is slow; two workers die along the way.
      if (w == 0 && gen.next() % 8 != 0)
        continue;
      if (lost < 2 && w != 0 && gen.next() % 97 == 0) {
        alive[w] = false;
        ++lost;
        t.lose(w);
        continue;
      }
      if (t.complete(*busy[w], w))
        ++counted[*busy[w]];
      busy[w].reset();
    }
    REQUIRE(t.done());
    for (std::size_t p = 0; p < portions; ++p) {
      INFO("portion " << p);
      CHECK(counted[p] == 1);
      CHECK(t.winner(p).has_value());
    }
    CHECK(t.completed() == portions);
    // The slow worker's portions got backups, whose twins were discarded.
    CHECK(t.backups() > 0);
  }
}

TEST_CASE("backups only when the pool is empty; consecutive portions per "
          "worker; a lost worker's portions return to the pool") {
  portion_table t{6};
  CHECK(t.assign(0) == 0u);
  CHECK(t.assign(1) == 1u);
  CHECK(t.complete(0, 0));
  CHECK(t.assign(0) == 2u); // the one after its last free one
  CHECK(t.assign(2) == 3u);
  CHECK(t.lose(2) == 1); // portion 3 back to the pool
  CHECK(t.reissued() == 1);
  CHECK(t.complete(2, 0));
  CHECK(t.assign(0) == 3u); // affinity: after 2
  CHECK(t.assign(1) == 4u);
  CHECK(t.assign(3) == 5u);
  CHECK(t.backups() == 0);
  // The pool is empty: a backup of the outstanding portion with the fewest
  // holders that worker 4 does not hold (1, 3 and 5 are held once: 1).
  CHECK(t.assign(4) == 1u);
  CHECK(t.backups() == 1);
  CHECK(t.complete(1, 4));       // the backup wins
  CHECK_FALSE(t.complete(1, 1)); // the original's late twin is discarded
  CHECK(t.duplicates() == 1);
  CHECK(t.winner(1) == 4u);
  CHECK_FALSE(t.complete(99, 0));
  CHECK_THROWS_AS(portion_table{0}, std::invalid_argument);
}
