// A ShadowSync syncer placed again on a node from its checkpoint file
// (the "resumed_shadow_syncer" role a resumed coordinator asks for): it
// starts at the saved round, pauses, drains (its member and the shards
// answer a flush) and saves the same state; a file that does not fit the
// syncer is refused at the spawn, naming the file.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>
#include <catch2/catch.hpp>

#include "actors/node_agent.hpp"
#include "algos/registry.hpp"
#include "algos/shadow/shadow.hpp"
#include "algos/shadow/shadow_state.hpp"
#include "algos/shadow/shadow_syncer.hpp"
#include "harness.hpp"
#include "test_config.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;
using handles = std::vector<caf::actor>;

namespace {

using config = test::node_config<>;

/// An agent obeying this process, set up with an LSQ job of 2 workers and 2
/// shards under ShadowSync.
node_actor agent_for(caf::actor_system& sys, std::uint64_t seed) {
  auto job
      = test::lsq_job(test::lsq_512x20(seed), 2, 2, "sgd", 0.05, 16, 5, seed);
  test::install<algos::shadow>(job);
  node_agent_config nc;
  nc.node_name = "node0:100";
  nc.coordinator = sys.node();
  nc.build = [job](const std::string&) { return built_job{job, "f"}; };
  nc.roles = algos::node_roles();
  auto a = sys.spawn(node_agent, nc);
  caf::scoped_actor self{sys};
  self->request(a, 10s, messages::setup_atom::value, std::string{"{}"})
      .receive([](std::string&) {},
               [&](caf::error& e) { FAIL("setup: " << sys.render(e)); });
  return a;
}

caf::expected<caf::actor> spawn_role(caf::scoped_actor& self,
                                     const node_actor& a, std::string role,
                                     caf::message args) {
  caf::expected<caf::actor> out{caf::actor{}};
  self->request(a, 10s, messages::spawn_atom::value, std::move(role),
                std::move(args))
      .receive([&](caf::actor& h) { out = std::move(h); },
               [&](caf::error& e) { out = std::move(e); });
  return out;
}

} // namespace

TEST_CASE("a ShadowSync syncer resumes on a node from its checkpoint file") {
  const std::uint64_t seed = 23;
  std::cout << "seed " << seed << std::endl;
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto agent = agent_for(sys, seed);
  auto must = [&](caf::expected<caf::actor> h) {
    INFO((h ? std::string{"ok"} : sys.render(h.error())));
    REQUIRE(h);
    return *h;
  };
  handles shards{must(spawn_role(self, agent, "shard", caf::make_message(0u))),
                 must(spawn_role(self, agent, "shard", caf::make_message(1u)))};
  auto w = must(spawn_role(
      self, agent, "worker",
      caf::make_message(messages::worker_id{0}, shards, caf::actor{})));
  algos::shadow_syncer_saved s;
  s.index = 0;
  s.mode = "ma";
  s.round = 7;
  s.last_steps = {12};
  s.rounds = 7;
  s.corrections = 7;
  s.messages = 40;
  s.bytes = 4000;
  s.steps_between = 12;
  s.seconds_in_rounds = 0.25;
  auto syncer = caf::actor_cast<algos::shadow_syncer_actor>(must(
      spawn_role(self, agent, "resumed_shadow_syncer",
                 caf::make_message(0u, handles{w}, shards, algos::encode(s)))));
  std::uint64_t round = 0;
  self->request(syncer, 10s, messages::pause_atom::value)
      .receive([&](std::uint64_t r) { round = r; },
               [&](caf::error& e) { FAIL(sys.render(e)); });
  CHECK(round == 7);
  bool drained = false;
  self->request(syncer, 10s, messages::pause_atom::value, round)
      .receive([&](messages::ack_atom) { drained = true; },
               [&](caf::error& e) { FAIL(sys.render(e)); });
  CHECK(drained);
  std::string bytes;
  self->request(syncer, 10s, messages::save_atom::value)
      .receive([&](std::string& b) { bytes = std::move(b); },
               [&](caf::error& e) { FAIL(sys.render(e)); });
  auto back = algos::decode_shadow_syncer(bytes, "back");
  CHECK(back.round == 7);
  CHECK(back.last_steps == s.last_steps);
  CHECK(back.corrections == 7);
  CHECK(back.bytes == 4000);
  CHECK(back.seconds_in_rounds == 0.25);
  // Another syncer's file, or one of a BMUF job: refused naming the file.
  auto other = s;
  other.index = 1;
  auto refused
      = spawn_role(self, agent, "resumed_shadow_syncer",
                   caf::make_message(0u, handles{w}, shards, encode(other)));
  REQUIRE_FALSE(refused);
  CHECK_THAT(sys.render(refused.error()), Catch::Contains("algo-syncer-0.state")
                                              && Catch::Contains("syncer 1"));
  other = s;
  other.mode = "bmuf";
  refused
      = spawn_role(self, agent, "resumed_shadow_syncer",
                   caf::make_message(0u, handles{w}, shards, encode(other)));
  REQUIRE_FALSE(refused);
  CHECK_THAT(sys.render(refused.error()), Catch::Contains("'bmuf'"));
  self->send(agent, messages::stop_atom::value, std::string{"test over"});
}
