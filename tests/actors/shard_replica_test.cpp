// Hot shard replicas (--shard-replicas, issue [11]) at the actor level: a
// backup attached to its primary holds the primary's parameters bit for bit
// (its state first, then every push in the primary's order, duplicates and
// rejections included), takes nothing from anyone else, and after its
// primary's loss applies a worker's pushes sent again exactly once.

#include <chrono>
#include <cmath>
#include <limits>

#include <caf/all.hpp>
#include <catch2/catch.hpp>

#include "actors/parameter_shard.hpp"
#include "test_config.hpp"

using namespace troupe;
using namespace troupe::messages;
using namespace std::chrono_literals;

namespace {

struct fixture {
  troupe::test::node_test_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};

  /// A shard of coordinates [2, 6) under AdaGrad (the order of the pushes
  /// changes the result); with `primary`: that shard's backup.
  actors::parameter_shard_actor shard(caf::actor_addr primary = {}) {
    actors::parameter_shard_config c;
    c.range = {2, 4};
    c.init = std::make_shared<const std::vector<float>>(
        std::vector<float>{0, 0, 1, 2, 3, 4, 0, 0});
    c.store.optimizer.name = "adagrad";
    c.store.lr = 0.1;
    c.primary = std::move(primary);
    return sys.spawn(actors::parameter_shard, c);
  }

  static push_msg push(worker_id w, std::uint64_t seq, std::vector<float> g) {
    push_msg p;
    p.worker = w;
    p.seq = seq;
    p.offset = 2;
    p.samples = 1;
    p.values = tensor{std::move(g)};
    return p;
  }

  shard_stats stats(const actors::parameter_shard_actor& s) {
    shard_stats out;
    self->request(s, 5s, stats_atom::value)
        .receive([&](shard_stats& x) { out = std::move(x); },
                 [&](caf::error& e) { FAIL(sys.render(e)); });
    return out;
  }

  std::vector<float> params(const actors::parameter_shard_actor& s) {
    std::vector<float> out;
    self->request(s, 5s, fetch_msg{0, 2, 4, 0})
        .receive([&](params_msg& p) { out = p.values.values(); },
                 [&](caf::error& e) { FAIL(sys.render(e)); });
    return out;
  }

  bool attach(const actors::parameter_shard_actor& primary,
              const actors::parameter_shard_actor& backup) {
    bool ok = false;
    self->request(primary, 5s, replicate_atom::value,
                  caf::actor_cast<caf::actor>(backup))
        .receive([&](bool x) { ok = x; },
                 [&](caf::error& e) { FAIL(sys.render(e)); });
    return ok;
  }
};

} // namespace

TEST_CASE_METHOD(fixture, "a hot backup ends with its primary's parameters",
                 "[replica]") {
  auto primary = shard();
  auto backup = shard(primary.address());
  // Pushes before the backup is attached reach it with the state.
  self->send(primary, push(0, 1, {1, 1, 1, 1}));
  self->send(primary, push(1, 1, {0.5f, -1, 2, 0}));
  REQUIRE(attach(primary, backup));
  auto nan = std::numeric_limits<float>::quiet_NaN();
  for (std::uint64_t k = 2; k <= 20; ++k) {
    auto x = static_cast<float>(k);
    self->send(primary, push(0, k, {x, -x, 0.5f, 1 / x}));
    self->send(primary, push(1, k, {1 / x, 2, -x, 0.25f}));
  }
  self->send(primary, push(1, 20, {9, 9, 9, 9}));   // a duplicate
  self->send(primary, push(0, 21, {nan, 0, 0, 0})); // rejected
  auto p = stats(primary); // with its backup's figures after every push
  auto b = stats(backup);
  CHECK(p.backup_hash == p.params_hash);
  CHECK(p.backup_version == p.version);
  CHECK(p.version == 40);
  CHECK(b.version == p.version);
  CHECK(b.params_hash == p.params_hash);
  REQUIRE(b.workers.size() == p.workers.size());
  for (std::size_t i = 0; i < p.workers.size(); ++i) {
    CHECK(b.workers[i].applied == p.workers[i].applied);
    CHECK(b.workers[i].duplicates == p.workers[i].duplicates);
    CHECK(b.workers[i].non_finite == p.workers[i].non_finite);
  }
  CHECK(params(backup) == params(primary));
  CHECK(params(primary) != std::vector<float>{1, 2, 3, 4});
  // The primary's requests to its backup (their timeouts hold it) end here.
  self->send_exit(primary, caf::exit_reason::user_shutdown);
}

TEST_CASE_METHOD(fixture,
                 "a backup takes state and pushes from its primary "
                 "alone",
                 "[replica]") {
  auto primary = shard();
  auto backup = shard(primary.address());
  // This test's actor is not the primary.
  self->send(backup, replicate_atom::value, push(0, 1, {1, 1, 1, 1}));
  bool refused = false;
  self->request(backup, 5s, replicate_atom::value, std::string{"junk"})
      .receive([&](bool) {}, [&](caf::error&) { refused = true; });
  CHECK(refused);
  CHECK(stats(backup).version == 0);
  CHECK(params(backup) == std::vector<float>{1, 2, 3, 4});
  // Only an asynchronous shard without a staleness bound takes a backup.
  actors::parameter_shard_config c;
  c.range = {2, 4};
  c.init = std::make_shared<const std::vector<float>>(8, 0.0f);
  c.staleness_bound = 1;
  auto ssp = sys.spawn(actors::parameter_shard, c);
  bool failed = false;
  self->request(ssp, 5s, replicate_atom::value,
                caf::actor_cast<caf::actor>(backup))
      .receive([&](bool) {}, [&](caf::error&) { failed = true; });
  CHECK(failed);
}

TEST_CASE_METHOD(fixture,
                 "after its primary's loss a backup applies pushes "
                 "sent again once",
                 "[replica]") {
  auto primary = shard();
  auto backup = shard(primary.address());
  REQUIRE(attach(primary, backup));
  for (std::uint64_t k = 1; k <= 5; ++k)
    self->send(primary, push(0, k, {1, 0, 0, 0}));
  stats(primary);
  self->send_exit(primary, caf::exit_reason::kill);
  // The worker's recent pushes 3..5 again, then new ones 6 and 7.
  for (std::uint64_t k = 3; k <= 7; ++k)
    self->send(backup, push(0, k, {1, 0, 0, 0}));
  auto b = stats(backup);
  CHECK(b.version == 7);
  REQUIRE(b.workers.size() == 1);
  CHECK(b.workers[0].applied == 7);
  CHECK(b.workers[0].duplicates == 3);
}

namespace {

using release_atom = caf::atom_constant<caf::atom("release")>;

/// A backup that takes the state and the pushes but answers the primary's
/// flushes only when told to (a backup behind a slow link).
struct lagging_state {
  std::vector<caf::response_promise> flushes;
  std::uint64_t pushes = 0;
};

caf::behavior lagging_backup(caf::stateful_actor<lagging_state>* self) {
  return {
      [](replicate_atom, const std::string&) { return true; },
      [self](replicate_atom, const push_msg&) { ++self->state.pushes; },
      [self](flush_atom) {
        auto p = self->make_response_promise();
        self->state.flushes.push_back(p);
        return p;
      },
      [self](release_atom) {
        auto n = self->state.flushes.size();
        for (auto& p : self->state.flushes)
          p.deliver(std::uint64_t{0});
        self->state.flushes.clear();
        return std::make_tuple(n, self->state.pushes);
      },
  };
}

} // namespace

TEST_CASE_METHOD(fixture,
                 "a primary holds the fetches while its backup lags behind",
                 "[replica]") {
  auto primary = shard();
  auto backup = sys.spawn(lagging_backup);
  bool ok = false;
  self->request(primary, 5s, replicate_atom::value, backup)
      .receive([&](bool x) { ok = x; },
               [&](caf::error& e) { FAIL(sys.render(e)); });
  REQUIRE(ok);
  // 4 flushes of 32 pushes each: the window is full, yet pushes go on.
  for (std::uint64_t k = 1; k <= 4 * 32 + 3; ++k)
    self->send(primary, push(0, k, {1, 0, 0, 0}));
  CHECK(stats(primary).version == 4 * 32 + 3);
  bool answered = false;
  self->send(primary, fetch_msg{0, 2, 4, 0});
  self->receive([&](params_msg&) { answered = true; },
                caf::after(std::chrono::milliseconds{300}) >> [] {});
  CHECK_FALSE(answered); // held while the backup lags
  std::size_t released = 0;
  std::uint64_t forwarded = 0;
  self->request(backup, 5s, release_atom::value)
      .receive(
          [&](std::size_t n, std::uint64_t pushes) {
            released = n;
            forwarded = pushes;
          },
          [&](caf::error& e) { FAIL(sys.render(e)); });
  CHECK(released == 4);
  CHECK(forwarded == 4 * 32 + 3);
  self->receive([&](params_msg&) { answered = true; },
                caf::after(std::chrono::seconds{5}) >> [] {});
  CHECK(answered);
  self->send_exit(primary, caf::exit_reason::user_shutdown);
  self->send_exit(backup, caf::exit_reason::user_shutdown);
}
