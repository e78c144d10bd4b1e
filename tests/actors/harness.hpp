#pragma once

// Shared by the actor tests: LSQ jobs and two ways to run them, on real
// threads (actors::run_job) or under CAF's test_coordinator with a seeded
// random choice of which actor runs next, so an interleaving is a function of
// the seed alone (printed by every test that uses it).

#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <nlohmann/json.hpp>

#include "actors/coordinator.hpp"
#include "actors/job.hpp"
#include "messages/registry.hpp"
#include "optim/replica.hpp"
#include "optim/rng.hpp"
#include "optim/synthetic.hpp"

namespace troupe::test {

/// An LSQ job: `workers` workers on disjoint parts of the examples, K
/// shards, server optimizer `server` at rate `lr`, batch `batch`.
inline actors::job_config lsq_job(std::shared_ptr<const optim::lsq_problem> p,
                                  std::uint32_t workers, std::uint32_t shards,
                                  std::string server, double lr,
                                  std::size_t batch, std::uint64_t steps,
                                  std::uint64_t seed) {
  actors::job_config job;
  job.workers = workers;
  job.shards = shards;
  auto d = static_cast<std::size_t>(p->a.cols());
  job.init = std::make_shared<const std::vector<float>>(d, 0.0f);
  auto m = static_cast<std::size_t>(p->a.rows());
  auto parts = std::make_shared<std::vector<std::vector<std::size_t>>>(workers);
  for (std::size_t i = 0; i < m; ++i)
    (*parts)[i % workers].push_back(i);
  job.make_replica = [p, parts, batch, seed](messages::worker_id w) {
    return std::make_unique<optim::synthetic_replica<optim::lsq_problem>>(
        p, (*parts)[w], batch, seed + w);
  };
  job.steps_per_worker = steps;
  job.server.optimizer.name = std::move(server);
  job.server.lr = lr;
  job.final_params = std::make_shared<std::vector<float>>();
  return job;
}

/// The LSQ problem of the actor tests: 512 examples, 20 parameters,
/// condition 10, noise 0.1.
inline std::shared_ptr<const optim::lsq_problem>
lsq_512x20(std::uint64_t seed) {
  optim::lsq_options o;
  o.m = 512;
  o.d = 20;
  o.condition = 10;
  o.noise = 0.1;
  o.seed = seed;
  return std::make_shared<const optim::lsq_problem>(optim::make_lsq(o));
}

/// f(x) - f* for float parameters.
inline double lsq_gap(const optim::lsq_problem& p,
                      const std::vector<float>& x) {
  std::vector<double> xd(x.begin(), x.end());
  return optim::objective(p, xd.data()) - p.f_star;
}

/// Runs `job` under the deterministic test scheduler, choosing the next
/// runnable actor with a generator seeded by `seed`. Returns the final JSON.
inline nlohmann::json run_seeded(actors::job_config job, std::uint64_t seed) {
  struct config : caf::actor_system_config {
    config() {
      messages::register_types(*this);
      set("scheduler.policy", caf::atom("testing"));
    }
  } cfg;
  caf::actor_system sys{cfg};
  auto& sched
      = dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler());
  auto result = std::make_shared<std::string>();
  auto coord = sys.spawn(actors::coordinator, std::move(job));
  sys.spawn([coord, result](caf::event_based_actor* self) {
    self->request(coord, caf::infinite, messages::result_atom::value)
        .then([result](std::string& text) { *result = std::move(text); });
  });
  optim::rng gen{seed};
  while (result->empty()) {
    if (sched.jobs.empty()) {
      if (!sched.trigger_timeout())
        break;
      continue;
    }
    auto i = static_cast<std::size_t>(gen.next() % sched.jobs.size());
    std::swap(sched.jobs[0], sched.jobs[i]);
    sched.run_once();
  }
  sched.run();
  if (result->empty())
    return {{"error", "the job stalled: no runnable actor and no result"}};
  return nlohmann::json::parse(*result);
}

} // namespace troupe::test
