// A node joining a running job (elastic scale-up): node agents in this
// process, the join handed to the coordinator as the registrar does. The
// live workers cede steps and examples, the newcomers train, every planned
// step is taken; an algorithm that is not elastic and the cap refuse; a
// joined node that dies is lost like any other.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <mutex>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>
#include <catch2/catch.hpp>

#include "actors/detail/rebalance.hpp"
#include "actors/node_agent.hpp"
#include "algos/registry.hpp"
#include "harness.hpp"
#include "messages/errors.hpp"
#include "test_config.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

using config = test::node_config<8>;

/// The examples each joined worker was built over.
struct joined_data {
  std::mutex mtx;
  std::vector<std::vector<std::uint64_t>> examples;
};

/// A downpour LSQ job of `workers` workers taking `steps` steps of about
/// 1 ms, whose joined workers' replicas are recorded in `data`.
actors::job_config elastic_job(const std::string& algo, std::uint32_t workers,
                               std::uint64_t steps, std::uint64_t seed,
                               std::shared_ptr<joined_data> data) {
  auto prob = test::lsq_512x20(seed);
  auto job = test::lsq_job(prob, workers, 1, "sgd", 0.01, 16, steps, seed);
  job.algorithm = algos::make_algorithm(algo);
  job.make_joined_replica = [prob, seed,
                             data](messages::worker_id w,
                                   const std::vector<std::uint64_t>& ex) {
    {
      std::lock_guard<std::mutex> lock{data->mtx};
      data->examples.push_back(ex);
    }
    return std::make_unique<optim::synthetic_replica<optim::lsq_problem>>(
        prob, std::vector<std::size_t>(ex.begin(), ex.end()), 16, seed + w);
  };
  for (std::uint32_t w = 0; w < workers; ++w) {
    job.step_counters.push_back(
        std::make_shared<std::atomic<std::uint64_t>>(0));
    job.step_delays.push_back(1000us);
  }
  return job;
}

/// A node agent (named `name`) set up with `job`.
actors::node_actor agent(caf::actor_system& sys, const actors::job_config& job,
                         const std::string& name) {
  actors::node_agent_config nc;
  nc.node_name = name;
  nc.coordinator = sys.node();
  nc.roles = algos::node_roles();
  nc.build = [job](const std::string&) { return actors::built_job{job, "f"}; };
  auto a = sys.spawn(actors::node_agent, nc);
  caf::scoped_actor self{sys};
  self->request(a, 10s, messages::setup_atom::value, std::string{"{}"})
      .receive([](std::string&) {},
               [&](caf::error& e) { FAIL("setup: " << sys.render(e)); });
  return a;
}

/// Workers 0..n-1 on one node agent; the shards stay here.
actors::node_actor place_all(caf::actor_system& sys, actors::job_config& job) {
  auto a = agent(sys, job, "node0:100");
  job.placement.worker_node.assign(job.workers, 0);
  job.placement.shard_node.assign(job.shards, -1);
  job.placement.nodes.push_back(a);
  job.placement.node_names.push_back("node0:100");
  return a;
}

/// Asks the coordinator to take node `a` with `slots` worker slots: the
/// workers placed, or the refusal's reason.
std::pair<std::uint32_t, std::string> join(caf::actor_system& sys,
                                           const caf::actor& coord,
                                           const actors::node_actor& a,
                                           const std::string& name,
                                           std::uint32_t slots) {
  messages::hello_msg hello;
  hello.node = name;
  hello.worker_slots = slots;
  std::pair<std::uint32_t, std::string> out{0, ""};
  caf::scoped_actor self{sys};
  self->request(caf::actor_cast<actors::coordinator_actor>(coord), 30s,
                messages::join_atom::value, hello,
                caf::actor_cast<caf::actor>(a))
      .receive([&](std::uint32_t n) { out.first = n; },
               [&](caf::error& e) {
                 CHECK(e == messages::errc::join_refused);
                 out.second = messages::context_of(e);
               });
  return out;
}

void wait_steps(const actors::job_config& job, std::size_t w,
                std::uint64_t steps) {
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (job.step_counters[w]->load() < steps) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(1ms);
  }
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

TEST_CASE("rebalance arithmetic: cede shares keep a step, splits add up") {
  using namespace actors::detail;
  CHECK(steps_to_cede(100, 2, 4) == 50);
  CHECK(steps_to_cede(101, 1, 3) == 33);
  CHECK(steps_to_cede(1, 1, 2) == 0);
  CHECK(steps_to_cede(2, 9, 10) == 1); // keeps one
  CHECK(steps_to_cede(50, 0, 3) == 0);
  CHECK(steps_to_cede(50, 3, 3) == 0);
  CHECK(steps_to_cede(~std::uint64_t{0}, 1, 2) == ~std::uint64_t{0} / 2);
  auto s = split_steps(11, 3);
  CHECK(s == std::vector<std::uint64_t>{4, 4, 3});
  CHECK(split_steps(5, 0).empty());
  std::vector<std::uint64_t> ex{1, 2, 3, 4, 5, 6, 7};
  auto parts = split_examples(ex, 3);
  REQUIRE(parts.size() == 3);
  std::vector<std::uint64_t> back;
  for (auto& p : parts) {
    CHECK(p.size() >= 2);
    CHECK(p.size() <= 3);
    back.insert(back.end(), p.begin(), p.end());
  }
  CHECK(back == ex);
}

TEST_CASE("a node joins a running downpour job: the live workers cede steps "
          "and undrawn examples, the newcomers train, the ledger adds up") {
  const std::uint64_t seed = 31, steps = 400;
  std::cout << "join: seed " << seed << std::endl;
  config cfg;
  caf::actor_system sys{cfg};
  auto data = std::make_shared<joined_data>();
  auto job = elastic_job("downpour", 2, steps, seed, data);
  auto first = place_all(sys, job);
  auto probe = job;
  auto newcomer = agent(sys, probe, "node1:101");
  auto coord = caf::actor_cast<caf::actor>(sys.spawn(actors::coordinator, job));
  wait_steps(probe, 0, 60);
  wait_steps(probe, 1, 60);
  auto [placed, why] = join(sys, coord, newcomer, "node1:101", 2);
  CHECK(why == "");
  CHECK(placed == 2);
  auto out = result_of(sys, coord);
  INFO(out.dump().substr(0, 3000));
  REQUIRE_FALSE(out.contains("error"));
  CHECK(out["stop_reason"] == "steps done");
  CHECK(u(out, "steps_planned") == 2 * steps);
  CHECK(u(out, "steps_done") == 2 * steps);
  CHECK(u(out, "steps_lost") == 0);
  CHECK(u(out, "steps") == 2 * steps);
  REQUIRE(out["joined"].size() == 1);
  auto j = out["joined"][0];
  CHECK(j["node"] == "node1:101");
  CHECK(j["workers"] == nlohmann::json::array({2, 3}));
  CHECK(j["steps_at_join"].get<std::uint64_t>() >= 120);
  CHECK(j["ceded_by"].size() == 2);
  CHECK(out["nodes"][1]["workers"] == nlohmann::json::array({2, 3}));
  // Each live worker ceded about half of its remaining steps (2 of 4
  // shares), keeping the rest; the newcomers took exactly what was ceded.
  REQUIRE(out["worker_stats"].size() == 4);
  std::uint64_t joined_steps = 0;
  for (int w : {2, 3}) {
    auto s = out["worker_stats"][w];
    CHECK(s["worker"] == w);
    CHECK(s["steps"].get<std::uint64_t>() > 0);
    joined_steps += s["steps"].get<std::uint64_t>();
  }
  CHECK(joined_steps == j["steps_ceded"].get<std::uint64_t>());
  CHECK(joined_steps
        >= (2 * steps - j["steps_at_join"].get<std::uint64_t>()) / 2 - 40);
  // The newcomers' examples: disjoint, from both live workers' parts
  // (even and odd indices), as many as reported.
  std::lock_guard<std::mutex> lock{data->mtx};
  REQUIRE(data->examples.size() == 2);
  std::vector<std::uint64_t> all;
  for (auto& e : data->examples)
    all.insert(all.end(), e.begin(), e.end());
  CHECK(all.size() == j["examples_ceded"].get<std::uint64_t>());
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
  CHECK(std::any_of(all.begin(), all.end(), [](auto i) { return i % 2; }));
  CHECK(std::any_of(all.begin(), all.end(), [](auto i) { return !(i % 2); }));
  caf::anon_send_exit(first, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(newcomer, caf::exit_reason::user_shutdown);
}

TEST_CASE("joins refused: an algorithm that is not elastic, the cap") {
  const std::uint64_t seed = 37;
  std::cout << "join refusals: seed " << seed << std::endl;
  config cfg;
  caf::actor_system sys{cfg};
  {
    auto data = std::make_shared<joined_data>();
    auto job = elastic_job("sync", 2, 300, seed, data);
    auto first = place_all(sys, job);
    auto late = agent(sys, job, "node1:101");
    auto coord
        = caf::actor_cast<caf::actor>(sys.spawn(actors::coordinator, job));
    wait_steps(job, 0, 20);
    auto [placed, why] = join(sys, coord, late, "node1:101", 1);
    CHECK(placed == 0);
    CHECK(why.find("algorithm, sync, does not take nodes")
          != std::string::npos);
    auto out = result_of(sys, coord);
    CHECK_FALSE(out.contains("joined"));
    CHECK(u(out, "steps_done") == 600);
    caf::anon_send_exit(first, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(late, caf::exit_reason::user_shutdown);
  }
  {
    auto data = std::make_shared<joined_data>();
    auto job = elastic_job("downpour", 2, 400, seed, data);
    job.max_joined_workers = 1;
    auto first = place_all(sys, job);
    auto a = agent(sys, job, "node1:101");
    auto b = agent(sys, job, "node2:102");
    auto coord
        = caf::actor_cast<caf::actor>(sys.spawn(actors::coordinator, job));
    wait_steps(job, 0, 40);
    CHECK(join(sys, coord, a, "node1:101", 3).first == 1); // capped
    auto [placed, why] = join(sys, coord, b, "node2:102", 1);
    CHECK(placed == 0);
    CHECK(why.find("the cap") != std::string::npos);
    auto out = result_of(sys, coord);
    CHECK(out["joined"].size() == 1);
    CHECK(out["joined"][0]["workers"] == nlohmann::json::array({2}));
    CHECK(u(out, "steps_done") == 800);
    for (auto& x : {first, a, b})
      caf::anon_send_exit(x, caf::exit_reason::user_shutdown);
  }
}

TEST_CASE("a joined node that dies is lost like any other: its steps go back "
          "to the live workers") {
  const std::uint64_t seed = 41, steps = 400;
  std::cout << "joined node lost: seed " << seed << std::endl;
  config cfg;
  caf::actor_system sys{cfg};
  auto data = std::make_shared<joined_data>();
  auto job = elastic_job("downpour", 2, steps, seed, data);
  auto first = place_all(sys, job);
  auto newcomer = agent(sys, job, "node1:101");
  auto coord = caf::actor_cast<caf::actor>(sys.spawn(actors::coordinator, job));
  wait_steps(job, 0, 60);
  REQUIRE(join(sys, coord, newcomer, "node1:101", 2).first == 2);
  std::this_thread::sleep_for(30ms);
  // Its connection is lost: the roles go down as CAF reports it.
  caf::anon_send_exit(newcomer, caf::exit_reason::remote_link_unreachable);
  auto out = result_of(sys, coord);
  INFO(out.dump().substr(0, 3000));
  CHECK(out["stop_reason"] == "steps done");
  CHECK(u(out, "steps_done") == 2 * steps);
  CHECK(u(out, "steps_lost") == 0);
  REQUIRE(out["failures"].size() == 2);
  for (auto& f : out["failures"]) {
    CHECK(f["node"] == "node1:101");
    CHECK(f["index"].get<int>() >= 2);
    for (auto& to : f["reassigned_to"])
      CHECK(to.get<int>() < 2);
  }
  CHECK(out["lost_nodes"] == nlohmann::json::array({"node1:101"}));
  caf::anon_send_exit(first, caf::exit_reason::user_shutdown);
}
