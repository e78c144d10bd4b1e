#include "sim/run.hpp"

#include <chrono>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>

#include "actors/node_agent.hpp"
#include "algos/registry.hpp"
#include "messages/registry.hpp"

namespace troupe::sim {

namespace {

struct sim_config : caf::actor_system_config {
  sim_config() {
    messages::register_types(*this);
    scheduler::install(*this);
  }
};

/// What the driver learned.
struct outcome {
  std::string result;
  std::string failure;
  bool finished() const noexcept {
    return !result.empty() || !failure.empty();
  }
};

/// Node 0's driver: sets every node's agent up, starts the coordinator and
/// waits for its result.
void drive(caf::event_based_actor* self, std::vector<caf::actor> agents,
           actors::job_config job, std::shared_ptr<outcome> out) {
  auto pending = std::make_shared<std::size_t>(agents.size());
  auto job_ptr = std::make_shared<actors::job_config>(std::move(job));
  auto start = [self, job_ptr, out] {
    auto coord = self->spawn(actors::coordinator, std::move(*job_ptr));
    self->request(coord, caf::infinite, messages::result_atom::value)
        .then([out](std::string& text) { out->result = std::move(text); },
              [self, out](caf::error& err) {
                out->failure
                    = "the job did not finish: " + self->system().render(err);
              });
  };
  if (agents.empty()) {
    start();
    return;
  }
  for (std::size_t n = 0; n < agents.size(); ++n)
    self->request(agents[n], caf::infinite, messages::setup_atom::value,
                  std::string{})
        .then(
            [pending, start](const std::string&) {
              if (--*pending == 0)
                start();
            },
            [self, out, n](caf::error& err) {
              out->failure = "node " + std::to_string(n + 1)
                             + " could not set the job up: "
                             + self->system().render(err);
            });
}

/// The simulated node of shard i.
std::uint32_t shard_node(const sim_options& o, const actors::job_config& job,
                         std::uint32_t i) {
  switch (o.shards_on) {
  case sim_options::shard_place::own:
    return 1 + job.workers + i;
  case sim_options::shard_place::workers:
    return job.workers == 0 ? 0 : 1 + i % job.workers;
  case sim_options::shard_place::coordinator:
    break;
  }
  return 0;
}

std::string hex(std::uint64_t x) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, x >>= 4)
    s[static_cast<std::size_t>(i)] = digits[x & 15];
  return s;
}

} // namespace

std::uint32_t nodes_for(const actors::job_config& job, const sim_options& o) {
  auto n = std::uint64_t{1} + job.workers;
  if (o.shards_on == sim_options::shard_place::own)
    n += job.shards;
  if (n > 10'000'000)
    throw std::invalid_argument("a simulated cluster of " + std::to_string(n)
                                + " nodes is more than the 10^7 allowed");
  return static_cast<std::uint32_t>(n);
}

std::uint32_t node_of(const crash_spec& c, const actors::job_config& job,
                      const sim_options& o) {
  auto none = [&](std::uint32_t count) {
    return std::invalid_argument("--crash: no " + c.role + " "
                                 + std::to_string(c.index) + " (there are "
                                 + std::to_string(count) + ")");
  };
  if (c.role == "worker") {
    if (c.index >= job.workers)
      throw none(job.workers);
    return 1 + c.index;
  }
  if (c.role == "shard") {
    if (c.index >= job.shards)
      throw none(job.shards);
    return shard_node(o, job, c.index);
  }
  if (c.role == "node") {
    auto n = nodes_for(job, o);
    if (c.index >= n)
      throw none(n);
    return c.index;
  }
  throw std::invalid_argument("--crash: " + c.role
                              + " is not worker, shard or node");
}

nlohmann::json run_simulation(actors::job_config job, const sim_options& o) {
  auto nodes = nodes_for(job, o);
  // Roles run on the simulator's one thread: none of its own.
  job.detached_workers = false;
  sim_config cfg;
  caf::actor_system sys{cfg};
  sys.await_actors_before_shutdown(false);
  auto& sched = scheduler::of(sys);
  sched.configure(nodes, o.network, o.compute);
  auto real_params
      = static_cast<std::uint64_t>(job.init ? job.init->size() : 0);
  if (o.virtual_params != 0 && o.virtual_params < real_params)
    throw std::invalid_argument("--virtual-params="
                                + std::to_string(o.virtual_params)
                                + " is less than the model's "
                                + std::to_string(real_params) + " parameters");
  payload_scale scale{o.virtual_params != 0 ? o.virtual_params : real_params,
                      real_params};
  sched.scale_payloads(scale);
  // The job as every node builds it (no placement, no hooks).
  auto built = job;
  built.placement = {};
  built.on_progress = nullptr;
  built.observers.clear();
  built.final_params = nullptr;
  built.stop = nullptr;
  built.monitor = nullptr;
  built.checkpoints = {};
  // One description for every node's agent (each takes its own copy of it
  // at setup, as the node agent keeps its job).
  auto shared = std::make_shared<const actors::job_config>(std::move(built));
  auto roles = algos::node_roles();
  std::vector<caf::actor> agents;
  for (std::uint32_t n = 1; n < nodes; ++n) {
    actors::node_agent_config ac;
    ac.build = [shared](const std::string&) {
      return actors::built_job{*shared, "simulated"};
    };
    ac.node_name = "node-" + std::to_string(n);
    ac.obey_own_process = true;
    ac.roles = roles;
    sched.place_next(n);
    auto agent = sys.spawn(actors::node_agent, std::move(ac));
    agents.push_back(caf::actor_cast<caf::actor>(agent));
    job.placement.nodes.push_back(agent);
    job.placement.node_names.push_back("node-" + std::to_string(n));
  }
  if (!agents.empty()) {
    job.placement.worker_node.resize(job.workers);
    for (std::uint32_t w = 0; w < job.workers; ++w)
      job.placement.worker_node[w] = static_cast<std::int32_t>(w);
    job.placement.shard_node.resize(job.shards);
    for (std::uint32_t i = 0; i < job.shards; ++i)
      // Placement counts the agents' nodes from 0 (node 1 here); -1: the
      // coordinator's.
      job.placement.shard_node[i]
          = static_cast<std::int32_t>(shard_node(o, job, i)) - 1;
  }
  for (const auto& c : o.crashes)
    sched.crash_at(static_cast<nanos>(std::llround(c.seconds * 1e9)),
                   node_of(c, job, o));
  auto out = std::make_shared<outcome>();
  sched.place_next(0);
  sys.spawn(drive, agents, std::move(job), out);
  auto wall0 = std::chrono::steady_clock::now();
  auto wall = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(o.wall_seconds));
  sched.run([out] { return out->finished(); }, o.max_events, wall);
  auto wall_seconds
      = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0)
            .count();
  auto stats = sched.stats();
  auto simulated = static_cast<double>(sched.elapsed()) * 1e-9;
  auto why = sched.stop_reason();
  auto crashes = nlohmann::json::array();
  for (auto [node, at] : sched.crashes())
    crashes.push_back(
        {{"node", node}, {"seconds", static_cast<double>(at) * 1e-9}});
  sched.shutdown();
  if (!out->failure.empty())
    throw std::runtime_error(out->failure);
  if (out->result.empty())
    throw std::runtime_error("the simulated job did not finish: "
                             + (why.empty() ? std::string{"no result"} : why)
                             + " after " + std::to_string(simulated)
                             + " simulated seconds");
  auto result = nlohmann::json::parse(out->result);
  const auto& net = sched.network();
  result["simulation"] = {
      {"nodes", nodes},
      {"simulated_seconds", simulated},
      {"wall_seconds", wall_seconds},
      {"events", stats.handled},
      {"events_per_second",
       wall_seconds > 0 ? static_cast<double>(stats.handled) / wall_seconds
                        : 0.0},
      {"messages", stats.messages},
      {"remote_messages", stats.remote},
      {"timers", stats.timers},
      {"actors", stats.actors},
      {"compute_seconds", static_cast<double>(stats.compute_ns) * 1e-9},
      {"straggles", stats.straggles},
      {"serialize_seconds", static_cast<double>(stats.serialize_ns) * 1e-9},
      {"core_wait_seconds", static_cast<double>(stats.core_wait_ns) * 1e-9},
      {"dropped_messages", stats.dropped},
      {"network_bytes", net.bytes()},
      {"payload_bytes", stats.payload_bytes},
      {"virtual_params", scale.virtual_params},
      {"real_params", scale.real_params},
      {"payload_scale", scale.ratio()},
      {"core_bytes", net.core_bytes()},
      {"max_queueing_seconds", static_cast<double>(net.max_queueing()) * 1e-9},
      {"trace_hash", hex(stats.trace_hash)},
      {"crashes", crashes},
      {"network",
       {{"gbps", o.network.gbps},
        {"latency_us", o.network.latency_us},
        {"rack_size", o.network.rack_size},
        {"oversubscription", o.network.oversubscription}}},
      {"compute",
       {{"sample_seconds", o.compute.sample_seconds},
        {"value_seconds", o.compute.value_seconds},
        {"update_scale", o.compute.update_scale},
        {"straggle_p", o.compute.straggle_p},
        {"straggle_factor", o.compute.straggle_factor},
        {"jitter", o.compute.jitter},
        {"eval_seconds", o.compute.eval_seconds >= 0
                             ? nlohmann::json(o.compute.eval_seconds)
                             : nlohmann::json(nullptr)},
        {"timing_seed", o.compute.seed},
        {"serialize_gbps", o.compute.serialize_gbps},
        {"host_cores", o.compute.host_cores},
        {"core_sharing", o.compute.fair_share ? "fair" : "fifo"},
        {"node_threads", o.compute.node_threads},
        {"reply_copy", o.compute.reply_copy_in_handler},
        {"first_touch_gbps", o.compute.first_touch_gbps},
        {"host_shm", o.compute.shared_memory},
        {"shm_share", o.compute.shm_share}}}};
  return result;
}

} // namespace troupe::sim
