#pragma once

// Shared by the actor tests: LSQ jobs and two ways to run them, on real
// threads (actors::run_job) or under CAF's test_coordinator with a seeded
// random choice of which actor runs next, so an interleaving is a function of
// the seed alone (printed by every test that uses it).

#include <algorithm>
#include <cstdint>
#include <functional>
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
#include "algos/registry.hpp"
#include "messages/registry.hpp"
#include "optim/replica.hpp"
#include "optim/rng.hpp"
#include "optim/schedule.hpp"
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
  job.algorithm = algos::make_algorithm("downpour");
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

/// Installs a fresh algorithm A as the job's and returns it, to set its own
/// settings before the job runs (its build() is not called).
template <class A>
std::shared_ptr<A> install(actors::job_config& job) {
  auto a = std::make_shared<A>();
  job.algorithm = a;
  return a;
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

/// A step schedule: `lr` halved every `every` steps.
inline optim::schedule_options decay(double lr, std::size_t every) {
  optim::schedule_options s;
  s.name = "step";
  s.base_lr = lr;
  s.step_size = every;
  s.gamma = 0.5;
  return s;
}

/// Sandblaster's portion p of P of a LOGREG problem (contiguous examples):
/// writes the gradient *sum* over the portion to `grad`, sets `samples`,
/// returns the loss sum.
inline double logreg_portion(const optim::logreg_problem& prob,
                             std::size_t portions, std::size_t p,
                             const double* x, double* grad,
                             std::uint64_t& samples) {
  auto m = static_cast<std::size_t>(prob.y.size());
  std::vector<std::size_t> batch;
  for (auto i = p * m / portions; i < (p + 1) * m / portions; ++i)
    batch.push_back(i);
  auto loss = optim::batch_gradient(prob, x, batch, grad);
  auto count = static_cast<double>(batch.size());
  for (std::size_t i = 0; i < static_cast<std::size_t>(prob.x_star.size()); ++i)
    grad[i] *= count;
  samples = batch.size();
  return loss * count;
}

/// f(x) - f* for float parameters.
inline double lsq_gap(const optim::lsq_problem& p,
                      const std::vector<float>& x) {
  std::vector<double> xd(x.begin(), x.end());
  return optim::objective(p, xd.data()) - p.f_star;
}

/// Runs `job` under the deterministic test scheduler, choosing the next
/// runnable actor with a generator seeded by `seed`. Returns the final JSON.
/// With `before`: called before each actor runs, with the scheduler (a test
/// can find an actor among its jobs and kill it).
inline nlohmann::json
run_seeded(actors::job_config job, std::uint64_t seed,
           std::function<void(caf::scheduler::test_coordinator&)> before = {}) {
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
    if (before)
      before(sched);
    auto i = static_cast<std::size_t>(gen.next() % sched.jobs.size());
    std::swap(sched.jobs[0], sched.jobs[i]);
    sched.run_once();
  }
  sched.run();
  if (result->empty())
    return {{"error", "the job stalled: no runnable actor and no result"}};
  return nlohmann::json::parse(*result);
}

/// A replica that starts at `start` and leaves its final parameters in
/// `last` when the worker that owns it goes away.
class recorded_replica : public optim::synthetic_replica<optim::lsq_problem> {
public:
  recorded_replica(std::shared_ptr<const optim::lsq_problem> p,
                   std::vector<std::size_t> part, std::size_t batch,
                   std::uint64_t seed, const std::vector<float>& start,
                   std::shared_ptr<std::vector<float>> last)
      : synthetic_replica(std::move(p), std::move(part), batch, seed),
        last_(std::move(last)) {
    std::copy(start.begin(), start.end(), params());
  }
  ~recorded_replica() override {
    *last_ = std::vector<float>(params(), params() + size());
  }

private:
  std::shared_ptr<std::vector<float>> last_;
};

/// The examples of the 512-example problem dealt round robin to `workers`.
inline std::vector<std::vector<std::size_t>> deal(std::uint32_t workers) {
  std::vector<std::vector<std::size_t>> parts(workers);
  for (std::size_t i = 0; i < 512; ++i)
    parts[i % workers].push_back(i);
  return parts;
}

/// Non-iid: the examples sorted by target b, in contiguous blocks, one per
/// worker.
inline std::vector<std::vector<std::size_t>>
sorted_parts(const optim::lsq_problem& p, std::uint32_t workers) {
  std::vector<std::size_t> idx(static_cast<std::size_t>(p.b.size()));
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](auto i, auto j) {
    return p.b[static_cast<Eigen::Index>(i)]
           < p.b[static_cast<Eigen::Index>(j)];
  });
  std::vector<std::vector<std::size_t>> parts(workers);
  for (std::size_t k = 0; k < idx.size(); ++k)
    parts[k * workers / idx.size()].push_back(idx[k]);
  return parts;
}

/// Gives `job` recorded replicas (batch 16, seed + w) starting at
/// `starts[w]` over `parts` (default: deal(workers)); returns where each
/// worker's final parameters will be.
inline std::vector<std::shared_ptr<std::vector<float>>>
record_workers(actors::job_config& job,
               std::shared_ptr<const optim::lsq_problem> prob,
               std::vector<std::vector<float>> starts, std::uint64_t seed,
               std::vector<std::vector<std::size_t>> parts = {}) {
  if (parts.empty())
    parts = deal(job.workers);
  std::vector<std::shared_ptr<std::vector<float>>> lasts;
  for (std::uint32_t w = 0; w < job.workers; ++w)
    lasts.push_back(std::make_shared<std::vector<float>>());
  job.make_replica = [prob, parts, starts, lasts, seed](messages::worker_id w) {
    return std::make_unique<recorded_replica>(prob, parts[w], 16, seed + w,
                                              starts[w], lasts[w]);
  };
  return lasts;
}

} // namespace troupe::test
