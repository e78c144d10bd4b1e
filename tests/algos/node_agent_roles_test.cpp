// The node agent spawns roles by name: each built-in role (the shared ones
// and the algorithms' own, registered from their folders through
// algos::register_roles), a user's own role registered next to them, and
// refusals with typed errors for an unknown role and arguments of the wrong
// types (the agent goes on).

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>
#include <catch2/catch.hpp>

#include "actors/node_agent.hpp"
#include "actors/role_registry.hpp"
#include "algos/registry.hpp"
#include "algos/sandblaster/lbfgs_driver.hpp"
#include "algos/sandblaster/sandblaster.hpp"
#include "algos/shadow/shadow.hpp"
#include "harness.hpp"
#include "messages/errors.hpp"
#include "test_config.hpp"

using namespace troupe;
using namespace troupe::actors;
using namespace std::chrono_literals;
using messages::spawn_atom;
using messages::worker_id;
using handles = std::vector<caf::actor>;

namespace {

using config = test::node_config<>;

/// An LSQ job of 2 workers and 2 shards under ShadowSync: the shared roles
/// and its syncer (seed printed by the caller).
job_config two_by_two(std::uint64_t seed) {
  auto job
      = test::lsq_job(test::lsq_512x20(seed), 2, 2, "sgd", 0.05, 16, 5, seed);
  test::install<algos::shadow>(job);
  return job;
}

/// The same job under Sandblaster, whose run has 2 L-BFGS shards and 1
/// worker (its roles read it from the job's algorithm).
job_config lbfgs_two_by_one(std::uint64_t seed) {
  auto job = two_by_two(seed);
  auto lb = std::make_shared<algos::lbfgs_job>();
  lb->init = job.init;
  lb->shards = 2;
  lb->workers = 1;
  lb->compute = [](const double*, std::size_t, std::size_t, double*,
                   std::uint64_t&) { return 0.0; };
  test::install<algos::sandblaster>(job)->lbfgs = lb;
  return job;
}

/// A node agent obeying this process, set up with `job`, spawning `roles`
/// (unset: the shared roles and every algorithm's own, as troupe node).
node_actor agent_for(caf::actor_system& sys, job_config job,
                     std::shared_ptr<const role_registry> roles = nullptr) {
  node_agent_config nc;
  nc.node_name = "node0:100";
  nc.coordinator = sys.node();
  nc.build = [job](const std::string&) { return built_job{job, "f"}; };
  nc.roles = roles ? std::move(roles) : algos::node_roles();
  auto a = sys.spawn(node_agent, nc);
  caf::scoped_actor self{sys};
  self->request(a, 10s, messages::setup_atom::value, std::string{"{}"})
      .receive([](std::string&) {},
               [&](caf::error& e) { FAIL("setup: " << sys.render(e)); });
  return a;
}

/// Asks `agent` to spawn `role` with `args`: the handle, or the error.
caf::expected<caf::actor> spawn_role(caf::scoped_actor& self,
                                     const node_actor& a, std::string role,
                                     caf::message args) {
  caf::expected<caf::actor> out{caf::actor{}};
  self->request(a, 10s, spawn_atom::value, std::move(role), std::move(args))
      .receive([&](caf::actor& h) { out = std::move(h); },
               [&](caf::error& e) { out = std::move(e); });
  return out;
}

} // namespace

TEST_CASE("a node agent spawns each built-in role by name and stops them "
          "with the job",
          "[actors][node_agent]") {
  const std::uint64_t seed = 21;
  INFO("seed " << seed);
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto agent = agent_for(sys, two_by_two(seed));
  // Sandblaster's roles on a node of a Sandblaster job.
  auto lagent = agent_for(sys, lbfgs_two_by_one(seed));
  auto must = [&](caf::expected<caf::actor> h, const char* role) {
    INFO(role << ": " << (h ? std::string{"ok"} : sys.render(h.error())));
    REQUIRE(h);
    REQUIRE(*h);
    return *h;
  };
  handles shards{must(spawn_role(self, agent, "shard",
                                 caf::make_message(std::uint32_t{0})),
                      "shard"),
                 must(spawn_role(self, agent, "shard",
                                 caf::make_message(std::uint32_t{1})),
                      "shard")};
  auto w
      = must(spawn_role(self, agent, "worker",
                        caf::make_message(worker_id{0}, shards, caf::actor{})),
             "worker");
  auto syncer = must(
      spawn_role(self, agent, "shadow_syncer",
                 caf::make_message(std::uint32_t{0}, handles{w}, shards)),
      "shadow_syncer");
  handles lshards{must(spawn_role(self, lagent, "lbfgs_shard",
                                  caf::make_message(std::uint32_t{0})),
                       "lbfgs_shard"),
                  must(spawn_role(self, lagent, "lbfgs_shard",
                                  caf::make_message(std::uint32_t{1})),
                       "lbfgs_shard")};
  auto lw
      = must(spawn_role(self, lagent, "lbfgs_worker",
                        caf::make_message(worker_id{0}, lshards, caf::actor{})),
             "lbfgs_worker");
  // The roles are what their names say: the shard holds its range, the
  // worker the job's replica.
  self->request(caf::actor_cast<parameter_shard_actor>(shards[1]), 10s,
                messages::stats_atom::value)
      .receive([&](messages::shard_stats& s) { CHECK(s.shard == 1); },
               [&](caf::error& e) { FAIL(sys.render(e)); });
  self->request(caf::actor_cast<worker_actor>(w), 10s,
                messages::fetch_msg{0, 0, 20, 0})
      .receive([&](messages::params_msg& p) { CHECK(p.values.size() == 20); },
               [&](caf::error& e) { FAIL(sys.render(e)); });
  // Hosted: the job's stop ends every one of them.
  handles all{shards[0], shards[1], w, syncer, lshards[0], lshards[1], lw};
  for (auto& h : all)
    self->monitor(h);
  self->send(agent, messages::stop_atom::value, std::string{"test over"});
  self->send(lagent, messages::stop_atom::value, std::string{"test over"});
  std::set<caf::actor_addr> down;
  for (std::size_t i = 0; i < all.size(); ++i)
    self->receive([&](caf::down_msg& d) { down.insert(d.source); },
                  caf::after(10s) >> [&] { FAIL("a role did not end"); });
  CHECK(down.size() == all.size());
}

TEST_CASE("a user's own role deploys by name like a built-in one; unknown "
          "roles and wrong arguments are refused with typed errors",
          "[actors][node_agent]") {
  const std::uint64_t seed = 22;
  INFO("seed " << seed);
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto roles = std::make_shared<role_registry>();
  algos::register_roles(*roles);
  // A user's role: greets with a prefix, the node's name and the job's
  // worker count.
  roles->register_role<std::string>("greeter", [](role_context& ctx,
                                                  const std::string& prefix) {
    auto text = prefix + " from " + ctx.node() + " of a job with "
                + std::to_string(ctx.job().workers) + " workers";
    return ctx.host(ctx.self()->spawn([text]() -> caf::behavior {
      return {[text](const std::string& name) { return text + ", " + name; }};
    }));
  });
  CHECK_THROWS_AS(
      roles->register_role<std::uint32_t>(
          "shard", [](role_context& ctx,
                      const std::uint32_t&) { return ctx.host(caf::actor{}); }),
      std::invalid_argument);
  auto agent = agent_for(sys, two_by_two(seed), roles);
  auto g = spawn_role(self, agent, "greeter",
                      caf::make_message(std::string{"hi"}));
  REQUIRE(g);
  std::string answer;
  self->request(*g, 10s, std::string{"ada"})
      .receive([&](std::string& s) { answer = s; },
               [&](caf::error& e) { FAIL(sys.render(e)); });
  CHECK(answer == "hi from node0:100 of a job with 2 workers, ada");
  // An unknown role: the error lists the registered ones.
  auto unknown = spawn_role(self, agent, "nope", caf::make_message(1));
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error() == messages::errc::unknown_role);
  auto text = sys.render(unknown.error());
  INFO(text);
  CHECK_THAT(text,
             Catch::Contains(
                 "no role 'nope' (registered: gaia_server, greeter, "
                 "joined_worker, lbfgs_shard, lbfgs_worker, pipeline_stage, "
                 "resumed_gaia_server, "
                 "resumed_shadow_syncer, "
                 "resumed_shard, resumed_worker, "
                 "shadow_syncer, shard, shard_backup, "
                 "worker)"));
  // Arguments of the wrong types: the error names the role and both lists.
  auto bad = spawn_role(self, agent, "worker",
                        caf::make_message(std::string{"0"}, handles{}));
  REQUIRE_FALSE(bad);
  CHECK(bad.error() == messages::errc::bad_arguments);
  text = sys.render(bad.error());
  CHECK_THAT(text, Catch::Contains("role 'worker' takes ("));
  CHECK_THAT(text, Catch::Contains(", not ("));
  auto none = spawn_role(self, agent, "shard", caf::message{});
  REQUIRE_FALSE(none);
  CHECK(none.error() == messages::errc::bad_arguments);
  // The role's own refusal (a shard the job does not have) names it.
  auto out_of_range
      = spawn_role(self, agent, "shard", caf::make_message(std::uint32_t{9}));
  REQUIRE_FALSE(out_of_range);
  CHECK_THAT(sys.render(out_of_range.error()),
             Catch::Contains("cannot spawn role 'shard' on node node0:100"));
  // The agent goes on.
  CHECK(spawn_role(self, agent, "shard", caf::make_message(std::uint32_t{0})));
  self->send(agent, messages::stop_atom::value, std::string{"test over"});
}

TEST_CASE("an algorithm's own roles come from its folder, not from actors/",
          "[algos][node_agent]") {
  auto shared = shared_roles()->names();
  // Shards and workers, fresh or from a checkpoint's state; a shard's hot
  // backup; workers of a node joining the running job.
  CHECK(shared
        == std::vector<std::string>{"joined_worker", "resumed_shard",
                                    "resumed_worker", "shard", "shard_backup",
                                    "worker"});
  auto all = algos::node_roles();
  for (const char* role :
       {"shard", "worker", "shadow_syncer", "lbfgs_shard", "lbfgs_worker"}) {
    INFO(role);
    CHECK(all->contains(role));
  }
  // Registering them twice in one registry is refused by name.
  auto twice = std::make_shared<role_registry>();
  algos::register_roles(*twice);
  CHECK_THROWS_AS(algos::register_roles(*twice), std::invalid_argument);
}
