// The simulator at scale (troupe simulate's engine, sim/run.hpp): N workers,
// each on a simulated node, train a synthetic LOGREG problem (16 examples a
// worker, batch 16) with real tensors through the real actors, with SGP
// (push-sum gossip) or Downpour (N/64 shards, at most one a parameter, on
// nodes of their own).
// Reported: simulated events per real second, real seconds, the resident
// memory each simulated node adds, the simulated seconds, and the gap to the
// optimum, plus, as a baseline measured in the same run, the same job's
// steps done serially by one replica without actors. One JSON object on
// stdout; one run per process (the peak RSS is the run's).
//
//   sim_scale [--nodes=1000] [--algo=sgp|downpour] [--steps=20] [--dim=10]
//             [--seed=101]

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "algos/registry.hpp"
#include "algos/sgp/sgp.hpp"
#include "optim/optimizer.hpp"
#include "optim/synthetic.hpp"
#include "scale_util.hpp"
#include "sim/run.hpp"

namespace {

using namespace troupe;
using bench::flag;
using bench::seconds_since;
using bench::status_kb;
using clock_type = bench::clock_type;

constexpr const char* usage
    = "usage: sim_scale [--nodes=1000] [--algo=sgp|downpour] [--steps=20] "
      "[--dim=10] [--seed=101]\n";

} // namespace

int main(int argc, char** argv) try {
  auto workers
      = static_cast<std::uint32_t>(flag(argc, argv, "nodes", 1000, usage));
  auto steps = flag(argc, argv, "steps", 20, usage);
  auto dim = flag(argc, argv, "dim", 10, usage);
  auto seed = flag(argc, argv, "seed", 101, usage);
  auto algo = bench::text_flag(argc, argv, "algo", "sgp", usage);
  if (workers < 2 || steps < 1 || dim < 1
      || (algo != "sgp" && algo != "downpour")) {
    std::cerr << "error: need --nodes >= 2, --steps >= 1, --dim >= 1, "
                 "--algo=sgp|downpour\n";
    return 2;
  }
  optim::logreg_options lo;
  lo.m = std::size_t{workers} * 16;
  lo.d = dim;
  lo.mu = 1e-2;
  lo.seed = seed;
  auto prob
      = std::make_shared<const optim::logreg_problem>(optim::make_logreg(lo));
  auto part_of = [prob, workers](std::uint32_t w) {
    std::vector<std::size_t> part;
    for (std::size_t i = w; i < static_cast<std::size_t>(prob->y.size());
         i += workers)
      part.push_back(i);
    return part;
  };
  // Baseline: the same steps, one replica, no actors.
  optim::synthetic_replica<optim::logreg_problem> serial{prob, part_of(0), 16,
                                                         seed};
  auto opt = optim::make_optimizer<float>({"sgd", 0, 0}, serial.size());
  auto t0 = clock_type::now();
  for (std::uint64_t s = 0; s < steps * workers; ++s) {
    serial.compute();
    opt->step(serial.params(), serial.grads(), serial.size(), 0.1f);
  }
  double serial_secs = seconds_since(t0);

  actors::job_config job;
  if (algo == "sgp") {
    auto sgp = std::make_shared<algos::sgp>();
    sgp->local.optimizer = {"sgd", 0, 0};
    sgp->local.lr = 0.5;
    job.algorithm = sgp;
    job.shards = 0;
  } else {
    job.algorithm = algos::make_algorithm("downpour");
    job.shards = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(dim, std::max<std::uint32_t>(1, workers / 64)));
    job.server.optimizer.name = "sgd";
    job.server.lr = 0.5 / workers;
  }
  job.workers = workers;
  job.init = std::make_shared<const std::vector<float>>(dim, 0.0f);
  job.make_replica = [prob, part_of, seed](messages::worker_id w) {
    return std::make_unique<optim::synthetic_replica<optim::logreg_problem>>(
        prob, part_of(w), 16, seed + w);
  };
  job.steps_per_worker = steps;
  job.final_params = std::make_shared<std::vector<float>>();
  auto final_params = job.final_params;
  sim::sim_options o;
  o.compute.sample_seconds = 1e-5; // 0.16 ms a step
  o.compute.seed = seed;
  auto rss_before = status_kb("VmRSS");
  std::cerr << "sim_scale: " << algo << " on " << workers << " nodes\n";
  t0 = clock_type::now();
  auto out = sim::run_simulation(std::move(job), o);
  double secs = seconds_since(t0);
  if (out.contains("error"))
    throw std::runtime_error(out["error"].dump());
  auto hwm = status_kb("VmHWM");
  std::vector<double> x(final_params->begin(), final_params->end());
  std::vector<double> zero(dim, 0.0);
  double gap
      = x.empty() ? -1 : optim::objective(*prob, x.data()) - prob->f_star;
  double start = optim::objective(*prob, zero.data()) - prob->f_star;
  const auto& s = out["simulation"];
  auto nodes = s["nodes"].get<double>();
  nlohmann::json j{
      {"benchmark", "sim_scale"},
      {"algo", algo},
      {"workers", workers},
      {"nodes", s["nodes"]},
      {"steps_per_worker", steps},
      {"dim", dim},
      {"seed", seed},
      {"real_seconds", secs},
      {"events", s["events"]},
      {"events_per_sec", s["events"].get<double>() / secs},
      {"messages", s["messages"]},
      {"simulated_seconds", s["simulated_seconds"]},
      {"trace_hash", s["trace_hash"]},
      {"gap_ratio", gap / start},
      {"rss_before_kb", rss_before},
      {"peak_rss_kb", hwm},
      {"memory_per_node_kb", (hwm - rss_before) / nodes},
      {"serial_steps_per_sec",
       static_cast<double>(steps * workers) / serial_secs},
      {"simulated_steps_per_real_sec", out["steps"].get<double>() / secs},
  };
  std::cout << j.dump() << std::endl;
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
