// A ShadowSync S-EASGD syncer whose center shard was lost with its node and
// restored (issue [11]): told the restored shard's handle (rebind_atom), it
// abandons the round waiting on the lost shard at once (not at the request
// timeout), and its next rounds fetch the center from the restored shard and
// push to it; its statistics count the pushes it sent.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "algos/shadow/shadow_syncer.hpp"
#include "messages/gossip.hpp"
#include "messages/messages.hpp"
#include "test_config.hpp"

using namespace troupe;
using namespace troupe::messages;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t n = 8;

/// A worker as its syncer sees it: answers its parameters (all ones).
caf::behavior member(caf::event_based_actor*) {
  return {
      [](fetch_msg&) {
        return params_msg{1, 0, tensor{std::vector<float>(n, 1.0f)}};
      },
      [](delta_msg&) {},
  };
}

/// A shard on a node that is gone: takes fetches and never answers.
caf::behavior silent_shard(caf::event_based_actor* self) {
  auto held
      = std::make_shared<std::vector<caf::response_promise>>(); // unanswered
  return {
      [self, held](fetch_msg&) {
        held->push_back(self->make_response_promise());
      },
      [](push_msg&) {},
  };
}

struct seen {
  std::atomic<std::size_t> fetches{0};
};

/// The restored shard: answers the center (zeros), counts its fetches and
/// forwards each push's sender and values to `observer`.
caf::behavior restored_shard(caf::event_based_actor* self,
                             std::shared_ptr<seen> s, caf::actor observer) {
  return {
      [s](fetch_msg&) {
        ++s->fetches;
        return params_msg{7, 0, tensor{std::vector<float>(n, 0.0f)}};
      },
      [self, observer](push_msg& p) {
        self->send(observer, p.worker, std::move(p.values));
      },
  };
}

} // namespace

TEST_CASE("an S-EASGD syncer told of a restored center shard goes on with "
          "it at once") {
  test::node_config<> cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto lost = sys.spawn(silent_shard);
  auto s = std::make_shared<seen>();
  algos::shadow_syncer_config sc;
  sc.index = 0;
  sc.members.push_back(
      caf::actor_cast<algos::shadow_member_actor>(sys.spawn(member)));
  sc.ids = {0};
  sc.shards.push_back(
      {caf::actor_cast<actors::parameter_shard_actor>(lost), {0, n}});
  sc.opts.mode = "easgd";
  sc.opts.alpha = 0.5;
  sc.opts.period = std::chrono::milliseconds{5};
  sc.workers = 1;
  sc.init = std::make_shared<const std::vector<float>>(n, 0.0f);
  // Far beyond the test's waits: only the rebind can end the first round.
  sc.timeout = caf::duration{std::chrono::seconds{120}};
  auto syncer = sys.spawn(algos::shadow_syncer, sc);
  self->send(syncer, peers_atom::value,
             std::vector<caf::actor>{caf::actor_cast<caf::actor>(syncer)});
  // Round 1 snapshots its member and waits on the lost shard's center.
  std::this_thread::sleep_for(200ms);
  auto fresh = sys.spawn(restored_shard, s, caf::actor{self});
  auto t0 = std::chrono::steady_clock::now();
  self->send(syncer, rebind_atom::value, std::uint32_t{0},
             caf::actor_cast<caf::actor>(fresh));
  worker_id from = 0;
  std::vector<float> first;
  self->receive(
      [&](worker_id w, tensor& values) {
        from = w;
        first.assign(values.data(), values.data() + values.size());
      },
      caf::after(std::chrono::seconds{10}) >>
          [&] { FAIL("no push reached the restored shard"); });
  auto waited
      = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
  INFO("first push " << waited << " s after the rebind");
  CHECK(waited < 10.0);
  CHECK(from == algos::shadow_syncer_ids + 0);
  CHECK(s->fetches >= 1);
  // It moves the center (0) toward the member (1) by alpha: the gradient
  // -alpha (1 - 0) of a unit-rate step, computed on the restored center.
  REQUIRE(first.size() == n);
  for (float v : first)
    CHECK(v == -0.5f);
  std::string stats;
  self->request(syncer, 10s, stats_atom::value)
      .receive([&](std::string& j) { stats = j; },
               [&](caf::error& e) { FAIL(sys.render(e)); });
  auto j = nlohmann::json::parse(stats);
  INFO(stats);
  CHECK(j["pushes"].get<std::uint64_t>() >= 1);
  // The round abandoned at the rebind pushed nothing.
  CHECK(j["rounds"].get<std::uint64_t>() >= j["pushes"].get<std::uint64_t>());
  CHECK(j["timeouts"] == 0);
  for (auto a : {caf::actor_cast<caf::actor>(syncer), lost, fresh,
                 caf::actor_cast<caf::actor>(sc.members[0])})
    self->send_exit(a, caf::exit_reason::user_shutdown);
}
