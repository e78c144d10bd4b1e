// SGP at scale in one process: N gossip peers (worker actors, default 256)
// train a synthetic LOGREG problem (each peer 16 examples, batch 16) with
// push-sum on the exponential graph, or with --dssync=M DS-Sync's group
// averaging in random groups of M (any worker may meet any other: one
// shared table of handles; with --lists=1 every worker gets its own list
// of all n handles instead, as before wire version 22: the baseline of
// the memory per peer); reported: the optimality gap of the
// mean model, gossip messages per second, the resident memory each peer
// adds, and, as a baseline measured in the same run, one replica stepping
// the same total number of steps serially without actors. Prints one JSON
// object on stdout; progress goes to stderr.
//
//   gossip_scale [--peers=256] [--steps=200] [--dim=10] [--seed=101]
//                [--dssync=0] [--lists=0]

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/job.hpp"
#include "algos/dssync/dssync.hpp"
#include "algos/registry.hpp"
#include "algos/sgp/sgp.hpp"
#include "optim/optimizer.hpp"
#include "optim/synthetic.hpp"
#include "scale_util.hpp"

namespace {

using namespace troupe;
using bench::flag;
using bench::seconds_since;
using bench::status_kb;
using clock_type = bench::clock_type;

constexpr const char* usage = "usage: gossip_scale [--peers=256] [--steps=200] "
                              "[--dim=10] [--seed=101] [--dssync=0] "
                              "[--lists=0]\n";

/// DS-Sync as it was before wire version 22: every worker gets the list of
/// all n handles (and keeps an entry per peer).
struct dssync_lists : algos::dssync {
  bool any_peer(const actors::job_config&) const override {
    return false;
  }
};

} // namespace

int main(int argc, char** argv) try {
  auto peers
      = static_cast<std::uint32_t>(flag(argc, argv, "peers", 256, usage));
  auto steps = flag(argc, argv, "steps", 200, usage);
  auto dim = flag(argc, argv, "dim", 10, usage);
  auto seed = flag(argc, argv, "seed", 101, usage);
  auto group = flag(argc, argv, "dssync", 0, usage);
  auto lists = flag(argc, argv, "lists", 0, usage) != 0;
  if (peers < 2 || steps < 1 || dim < 1 || group == 1) {
    std::cerr << "error: need --peers >= 2, --steps >= 1, --dim >= 1, "
                 "--dssync 0 or >= 2\n";
    return 2;
  }
  optim::logreg_options lo;
  lo.m = std::size_t{peers} * 16;
  lo.d = dim;
  lo.mu = 1e-2;
  lo.seed = seed;
  auto prob
      = std::make_shared<const optim::logreg_problem>(optim::make_logreg(lo));
  auto part_of = [prob, peers](std::uint32_t w) {
    std::vector<std::size_t> part;
    for (std::size_t i = w; i < static_cast<std::size_t>(prob->y.size());
         i += peers)
      part.push_back(i);
    return part;
  };
  optim::schedule_options sched;
  sched.name = "step";
  sched.base_lr = 0.5;
  sched.step_size = std::max<std::uint64_t>(steps / 4, 1);
  sched.gamma = 0.5;

  // Baseline: the same number of steps, one replica, no actors.
  std::cerr << "serial baseline\n";
  optim::synthetic_replica<optim::logreg_problem> serial{prob, part_of(0), 16,
                                                         seed};
  auto opt = optim::make_optimizer<float>({"sgd", 0, 0}, serial.size());
  optim::schedule lr{sched};
  auto t0 = clock_type::now();
  for (std::uint64_t s = 0; s < steps * peers; ++s) {
    serial.compute();
    opt->step(serial.params(), serial.grads(), serial.size(), lr.lr(s / peers));
  }
  double serial_secs = seconds_since(t0);

  std::cerr << peers << (group > 0 ? " DS-Sync peers\n" : " gossip peers\n");
  actors::job_config job;
  if (group > 0) {
    auto ds = lists ? std::make_shared<dssync_lists>()
                    : std::make_shared<algos::dssync>();
    ds->local.optimizer = {"sgd", 0, 0};
    ds->local.lr = sched.base_lr;
    ds->local.schedule = sched;
    ds->settings.group_size = static_cast<std::uint32_t>(group);
    ds->settings.seed = seed;
    job.algorithm = ds;
  } else {
    auto sgp = std::make_shared<algos::sgp>();
    sgp->local.optimizer = {"sgd", 0, 0};
    sgp->local.lr = sched.base_lr;
    sgp->local.schedule = sched;
    job.algorithm = sgp;
  }
  job.workers = peers;
  job.shards = 0;
  job.init = std::make_shared<const std::vector<float>>(dim, 0.0f);
  job.make_replica = [prob, part_of, seed](messages::worker_id w) {
    return std::make_unique<optim::synthetic_replica<optim::logreg_problem>>(
        prob, part_of(w), 16, seed + w);
  };
  job.steps_per_worker = steps;
  job.final_params = std::make_shared<std::vector<float>>();
  auto rss_before = status_kb("VmRSS");
  t0 = clock_type::now();
  auto out = actors::run_job(job);
  double secs = seconds_since(t0);
  auto hwm = status_kb("VmHWM");
  if (out.contains("error")) {
    std::cerr << "error: " << out["error"] << "\n";
    return 1;
  }
  std::vector<double> x(job.final_params->begin(), job.final_params->end());
  std::vector<double> zero(dim, 0.0);
  double gap = optim::objective(*prob, x.data()) - prob->f_star;
  double start = optim::objective(*prob, zero.data()) - prob->f_star;
  double messages = out["messages"].get<double>();
  double total_steps = out["steps"].get<double>();
  nlohmann::json j{
      {"benchmark", "gossip_scale"},
      {"algo", group > 0 ? "dssync" : "sgp"},
      {"group_size", group},
      {"handle_lists", lists},
      {"peers", peers},
      {"steps_per_peer", steps},
      {"dim", dim},
      {"seed", seed},
      {"seconds", secs},
      {"gap_start", start},
      {"gap_end", gap},
      {"gap_ratio", gap / start},
      {"messages", messages},
      {"messages_per_sec", messages / secs},
      {"bytes_sent", out["bytes_sent"]},
      {"steps_per_sec", total_steps / secs},
      {"weight_sum",
       group > 0 ? nlohmann::json(nullptr) : out["sgp"]["weight_sum"]},
      {"schedule", group > 0 ? out["dssync"]["schedule"] : "exponential"},
      {"rss_before_kb", rss_before},
      {"peak_rss_kb", hwm},
      {"memory_per_peer_kb", (hwm - rss_before) / peers},
      {"serial_steps_per_sec",
       static_cast<double>(steps * peers) / serial_secs},
      {"steps_per_sec_over_serial",
       total_steps / secs / (static_cast<double>(steps * peers) / serial_secs)},
  };
  std::cout << j.dump() << std::endl;
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
