// Failure accounting: every planned step is done or reported lost. Nodes are
// real node agents in this process; a node "dies" as a lost connection
// does, its roles going down one by one with remote_link_unreachable.

#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>
#include <catch2/catch.hpp>

#include "actors/node_agent.hpp"
#include "algos/dssync/dssync.hpp"
#include "algos/easgd/easgd.hpp"
#include "algos/lsgd/lsgd.hpp"
#include "algos/registry.hpp"
#include "algos/sgp/sgp.hpp"
#include "algos/shadow/shadow.hpp"
#include "harness.hpp"
#include "test_config.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

using config = test::node_config<8>; // sleeping steps hold their threads

/// Algorithm A with plain SGD local steps at rate 0.01, installed in `job`.
template <class A>
std::shared_ptr<A> local_sgd(actors::job_config& job) {
  auto a = test::install<A>(job);
  a->local.optimizer = {"sgd", 0, 0};
  a->local.lr = 0.01;
  return a;
}

/// An asynchronous job of `workers` LSQ workers taking `steps` steps of
/// about 1 ms each; LSGD's and ShadowSync's workers in groups `group_of`
/// (empty: one group).
actors::job_config async_job(const std::string& algo, std::uint32_t workers,
                             std::uint64_t steps, std::uint64_t seed,
                             std::vector<std::uint32_t> group_of = {}) {
  auto prob = test::lsq_512x20(seed);
  bool shards = algo == "downpour" || algo == "easgd";
  auto job = test::lsq_job(prob, workers, shards ? 1 : 0, "sgd", 0.01, 16,
                           steps, seed);
  if (algo == "easgd")
    local_sgd<algos::easgd>(job)->settings.lr = 0.01;
  else if (algo == "lsgd")
    local_sgd<algos::lsgd>(job)->group_of = group_of;
  else if (algo == "sgp")
    local_sgd<algos::sgp>(job);
  else if (algo == "dssync")
    local_sgd<algos::dssync>(job);
  else if (algo == "shadow") {
    auto shadow = local_sgd<algos::shadow>(job);
    shadow->settings.period = std::chrono::milliseconds{5};
    shadow->group_of = group_of;
  } else
    job.algorithm = algos::make_algorithm(algo);
  for (std::uint32_t w = 0; w < workers; ++w) {
    job.step_counters.push_back(
        std::make_shared<std::atomic<std::uint64_t>>(0));
    job.step_delays.push_back(std::chrono::microseconds{1000});
  }
  return job;
}

/// Node agents hosting the job's workers: worker w on node node_of[w]; the
/// shards stay here. Each agent keeps the reason of its stop in `reason`.
std::vector<caf::actor> place(caf::actor_system& sys, actors::job_config& job,
                              const std::vector<std::int32_t>& node_of,
                              std::shared_ptr<std::string> reason = nullptr) {
  std::int32_t nodes = 0;
  for (auto n : node_of)
    nodes = std::max(nodes, n + 1);
  job.placement.worker_node = node_of;
  job.placement.shard_node.assign(job.shards, -1);
  std::vector<caf::actor> agents;
  caf::scoped_actor self{sys};
  for (std::int32_t n = 0; n < nodes; ++n) {
    actors::node_agent_config nc;
    nc.node_name = "node" + std::to_string(n) + ":" + std::to_string(100 + n);
    nc.stop_reason = reason;
    nc.coordinator = sys.node();
    // As troupe node: the shared roles and the algorithms' own (syncers).
    nc.roles = algos::node_roles();
    nc.build = [job](const std::string&) {
      return actors::built_job{job, "f"};
    };
    auto a = sys.spawn(actors::node_agent, nc);
    self->request(a, 10s, messages::setup_atom::value, std::string{"{}"})
        .receive([](std::string&) {},
                 [&](caf::error& e) { FAIL("setup: " << sys.render(e)); });
    job.placement.nodes.push_back(a);
    job.placement.node_names.push_back(nc.node_name);
    agents.push_back(caf::actor_cast<caf::actor>(a));
  }
  return agents;
}

/// Waits (at most 30 s) until worker w has taken `steps` steps.
void wait_steps(const actors::job_config& job, std::size_t w,
                std::uint64_t steps) {
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (job.step_counters[w]->load() < steps) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(1ms);
  }
}

/// The node's connection is lost: its agent and roles go down with the
/// reason CAF gives for a lost connection.
void kill_node(const caf::actor& agent) {
  caf::anon_send_exit(agent, caf::exit_reason::remote_link_unreachable);
}

nlohmann::json result_of(caf::actor_system& sys, const caf::actor& coord) {
  caf::scoped_actor self{sys};
  nlohmann::json out;
  self->request(coord, 60s, messages::result_atom::value)
      .receive([&](std::string& text) { out = nlohmann::json::parse(text); },
               [&](caf::error& e) { FAIL("no result: " << sys.render(e)); });
  return out;
}

std::uint64_t u(const nlohmann::json& j, const char* key) {
  return j.at(key).get<std::uint64_t>();
}

} // namespace

TEST_CASE("a lost node's workers are lost at once; every planned step is "
          "taken, those handed to a worker that then dies too") {
  const std::uint64_t seed = 17, steps = 300;
  for (std::string algo : {"downpour", "easgd", "lsgd", "sgp", "dssync",
                           "shadow", "gadmm", "gaia"}) {
    std::cout << "ledger: " << algo << ", seed " << seed << std::endl;
    INFO("algo " << algo);
    config cfg;
    caf::actor_system sys{cfg};
    // LSGD, ShadowSync and Gaia: a group per node (Gaia: a server each,
    // lost with its node).
    auto job = async_job(algo, 6, steps, seed, {0, 1, 0, 1, 2, 2});
    // Workers 0 and 2 survive: SGP's exponential graph over 6 ranks links
    // them both ways (0 -> 2, 2 -> 0), so push-sum keeps its mass.
    const std::vector<std::int32_t> node_of{0, 1, 0, 1, 2, 2};
    auto agents = place(sys, job, node_of);
    auto probe = job; // the counters, shared
    auto coord = sys.spawn(actors::coordinator, std::move(job));
    // Node 1 dies; later node 2, whose workers hold node 1's steps by then.
    wait_steps(probe, 1, 40);
    kill_node(agents[1]);
    wait_steps(probe, 4, 150);
    kill_node(agents[2]);
    auto out = result_of(sys, caf::actor_cast<caf::actor>(coord));
    INFO(out.dump().substr(0, 4000));
    REQUIRE_FALSE(out.contains("error"));
    CHECK(out["stop_reason"] == "steps done");
    // Every step of the budget was taken (the report's older keys say it
    // too: the survivors' steps plus the lost workers').
    CHECK(u(out, "steps") + u(out, "lost_worker_steps") == 6 * steps);
    CHECK(u(out, "steps_planned") == 6 * steps);
    CHECK(u(out, "steps_done") == 6 * steps);
    CHECK(u(out, "steps_lost") == 0);
    CHECK(u(out, "steps_planned")
          == u(out, "steps_done") + u(out, "steps_lost"));
    REQUIRE(out["failures"].size() == 4);
    // Never to a dead worker: node 1's steps go to workers 0, 2, 4 and 5,
    // node 2's (node 1's among them) to 0 and 2.
    for (auto& f : out["failures"]) {
      CHECK(f["role"] == "worker");
      bool first = f["node"] == "node1:101";
      for (auto& to : f["reassigned_to"]) {
        auto t = to.get<std::int32_t>();
        CHECK((node_of[t] == 0 || (first && node_of[t] == 2)));
      }
    }
    for (auto& a : agents)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
}

TEST_CASE("a node lost after the others finished: rc 0 and a truthful "
          "partial completion, not 'every worker was lost'") {
  const std::uint64_t seed = 23, steps = 100;
  std::cout << "partial completion: seed " << seed << std::endl;
  config cfg;
  caf::actor_system sys{cfg};
  auto job = async_job("downpour", 2, steps, seed);
  job.step_delays[1] = std::chrono::microseconds{20000}; // 2 s in all
  auto agents = place(sys, job, {0, 1});
  auto probe = job;
  auto coord = sys.spawn(actors::coordinator, std::move(job));
  wait_steps(probe, 0, steps);
  std::this_thread::sleep_for(
      100ms); // its done message reaches the coordinator
  auto taken = probe.step_counters[1]->load();
  REQUIRE(taken < steps / 2);
  kill_node(agents[1]);
  auto out = result_of(sys, caf::actor_cast<caf::actor>(coord));
  INFO(out.dump().substr(0, 4000));
  CHECK_FALSE(out.contains("error"));
  CHECK(out["stop_reason"] == "partially done");
  CHECK_THAT(out.value("warning", ""),
             Catch::Contains("worker 1 on node1:101")
                 && Catch::Contains("steps not taken"));
  CHECK(u(out, "steps_planned") == 2 * steps);
  CHECK(u(out, "steps_planned") == u(out, "steps_done") + u(out, "steps_lost"));
  CHECK(u(out, "steps_lost") > 0);
  CHECK(out["step_ledger"]["unassigned"] == out["steps_lost"]);
  CHECK(u(out, "steps_done") == steps + u(out, "lost_worker_steps"));
  caf::anon_send_exit(agents[0], caf::exit_reason::user_shutdown);
}

TEST_CASE("a node holding two shards is lost: the job ends at once, naming "
          "both, and the nodes are told it failed") {
  const std::uint64_t seed = 29;
  std::cout << "two shards lost: seed " << seed << std::endl;
  config cfg;
  caf::actor_system sys{cfg};
  auto job = async_job("downpour", 2, 100000, seed);
  job.shards = 2;
  auto reason = std::make_shared<std::string>();
  // Node 1 has no worker (node_of names it for the count of nodes).
  auto agents = place(sys, job, {0, 1}, reason);
  job.placement.worker_node = {0, 0};
  job.placement.shard_node = {1, 1};
  auto probe = job;
  auto coord = sys.spawn(actors::coordinator, std::move(job));
  wait_steps(probe, 0, 20);
  kill_node(agents[1]);
  auto out = result_of(sys, caf::actor_cast<caf::actor>(coord));
  INFO(out.dump().substr(0, 4000));
  CHECK(out["stop_reason"] == "shard lost");
  CHECK_THAT(out.value("error", ""),
             Catch::Contains("shard 0 on node1:101 was lost")
                 && Catch::Contains("with shards 0, 1 on that node"));
  CHECK(u(out, "steps_planned") == u(out, "steps_done") + u(out, "steps_lost"));
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (reason->empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  CHECK(actors::job_failed(*reason));
  CHECK_THAT(*reason, Catch::Contains("shard lost"));
}

TEST_CASE("gaia: the node of group 0's server is lost; the job goes on and "
          "its model is the other group's") {
  const std::uint64_t seed = 19, steps = 300;
  std::cout << "ledger: gaia, group 0's server lost, seed " << seed
            << std::endl;
  config cfg;
  caf::actor_system sys{cfg};
  auto job = async_job("gaia", 4, steps, seed);
  auto prob = test::lsq_512x20(seed);
  auto params = job.final_params;
  auto agents = place(sys, job, {0, 0, 1, 1});
  auto probe = job;
  auto coord = sys.spawn(actors::coordinator, std::move(job));
  wait_steps(probe, 0, 40);
  kill_node(agents[0]); // workers 0 and 1, and group 0's server
  auto out = result_of(sys, caf::actor_cast<caf::actor>(coord));
  INFO(out.dump().substr(0, 3000));
  REQUIRE_FALSE(out.contains("error"));
  CHECK(out["stop_reason"] == "steps done");
  CHECK(u(out, "steps_done") == 4 * steps);
  CHECK(out["gaia"]["servers"].size() == 1); // group 1's answered
  // The evaluated (and saved) model is group 1's replica, trained.
  auto start = test::lsq_gap(*prob, std::vector<float>(20, 0.0f));
  REQUIRE(params->size() == 20);
  auto gap = test::lsq_gap(*prob, *params);
  std::cout << "  group 1's replica: f - f* = " << gap << " from " << start
            << std::endl;
  CHECK(gap < 1e-2 * start);
  for (auto& a : agents)
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}
