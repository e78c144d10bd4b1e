// A host's cores shared fairly (sim/shared_cores.hpp): every task on the host
// gets min(1, cores / tasks) of a core, so that when a task ends depends on
// the tasks that come after it; marks are heard when their work is done; no
// core's time is lost or made up.

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "sim/shared_cores.hpp"

using troupe::sim::nanos;
using troupe::sim::shared_cores;

namespace {

/// Runs the cores until no task is left; every reached mark by task.
std::map<shared_cores::task_id, std::vector<std::pair<nanos, nanos>>>
drain(shared_cores& c) {
  std::map<shared_cores::task_id, std::vector<std::pair<nanos, nanos>>> seen;
  std::vector<shared_cores::reached> out;
  while (c.tasks() > 0) {
    auto t = c.next();
    out.clear();
    c.advance(t, out);
    REQUIRE(!out.empty()); // every stop reaches something
    for (auto& r : out)
      seen[r.task].emplace_back(r.at_work, t);
  }
  return seen;
}

} // namespace

TEST_CASE("tasks share the cores fairly, and a late task slows an early one") {
  SECTION("as many tasks as cores: each at a core's speed") {
    shared_cores c{2};
    auto a = c.add(0, 100), b = c.add(0, 100);
    auto seen = drain(c);
    CHECK(seen[a].back().second == 100);
    CHECK(seen[b].back().second == 100);
    CHECK(c.waited_ns() == 0);
  }
  SECTION("two tasks on one core: both end at 200, not 100 and 200") {
    shared_cores c{1};
    auto a = c.add(0, 100), b = c.add(0, 100);
    auto seen = drain(c);
    CHECK(seen[a].back().second == 200);
    CHECK(seen[b].back().second == 200);
    CHECK(c.waited_ns() == 200);
  }
  SECTION("a task that comes at 50 halves the first one's speed from then") {
    shared_cores c{1};
    auto a = c.add(0, 100);
    CHECK(c.next() == 100); // alone, it would end at 100
    std::vector<shared_cores::reached> out;
    c.advance(50, out);
    CHECK(out.empty());
    auto b = c.add(50, 50);
    // Both have 50 left at half a core: both end at 150.
    auto seen = drain(c);
    CHECK(seen[a].back() == std::make_pair(nanos{100}, nanos{150}));
    CHECK(seen[b].back() == std::make_pair(nanos{50}, nanos{150}));
  }
  SECTION("a mark is heard when its share of the work is done") {
    shared_cores c{1};
    auto a = c.add(0, 100, {40, 60});
    c.add(0, 1000); // shares the core until a ends
    auto seen = drain(c);
    REQUIRE(seen[a].size() == 3);
    CHECK(seen[a][0] == std::make_pair(nanos{40}, nanos{80}));
    CHECK(seen[a][1] == std::make_pair(nanos{60}, nanos{120}));
    CHECK(seen[a][2] == std::make_pair(nanos{100}, nanos{200}));
  }
  SECTION("a removed task stops sharing the core") {
    shared_cores c{1};
    auto a = c.add(0, 100);
    auto b = c.add(0, 100);
    c.remove(20, b); // a did 10 by then
    auto seen = drain(c);
    CHECK(seen[a].back().second == 110);
    CHECK(seen.count(b) == 0);
  }
  CHECK_THROWS(shared_cores{0});
  shared_cores c{1};
  CHECK_THROWS(c.add(0, 0));
  CHECK_THROWS(c.add(0, 10, {7, 3}));
  c.add(10, 10);
  CHECK_THROWS(c.add(5, 10)); // back in time
}

TEST_CASE("shared cores lose no time and make none up (random tasks)") {
  auto seed = GENERATE(1u, 2u, 3u);
  std::cout << "seed " << seed << '\n';
  std::mt19937_64 rng{seed};
  std::uniform_int_distribution<nanos> work(1, 5000), gap(0, 3000);
  const std::uint32_t cores = 2;
  shared_cores c{cores};
  struct task {
    nanos start, work, end = -1;
  };
  std::map<shared_cores::task_id, task> tasks;
  // Tasks come at random instants while others run.
  nanos now = 0, busy = 0, last = 0;
  std::vector<shared_cores::reached> out;
  auto step_to = [&](nanos t) {
    // Between stops the number of tasks is constant: the cores' busy time
    // is min(tasks, cores) x the interval.
    busy += std::min<nanos>(static_cast<nanos>(c.tasks()), cores) * (t - last);
    last = t;
    out.clear();
    c.advance(t, out);
    for (auto& r : out)
      if (r.last)
        tasks.at(r.task).end = t;
  };
  for (int i = 0; i < 300; ++i) {
    now += gap(rng);
    while (c.next() <= now)
      step_to(c.next());
    step_to(now);
    auto w = work(rng);
    tasks[c.add(now, w)] = task{now, w};
  }
  while (c.tasks() > 0)
    step_to(c.next());
  nanos total = 0;
  std::uint64_t waited = 0;
  for (auto& [id, t] : tasks) {
    REQUIRE(t.end >= 0);
    CHECK(t.end >= t.start + t.work); // never faster than a core
    total += t.work;
    waited += static_cast<std::uint64_t>(t.end - t.start - t.work);
  }
  // The cores' busy time is the work, to a nanosecond a stop (rounding up).
  CHECK(busy >= total - static_cast<nanos>(tasks.size()));
  CHECK(busy <= total + 2 * static_cast<nanos>(tasks.size()) * cores);
  CHECK(c.waited_ns() == waited);
}
