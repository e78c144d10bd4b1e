#include "actors/job.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/scoped_actor.hpp>

#include "messages/registry.hpp"

namespace troupe::actors {

namespace {

struct job_system_config : caf::actor_system_config {
  job_system_config(std::size_t threads, const std::string& policy) {
    messages::register_types(*this);
    set("scheduler.max-threads", threads);
    set("scheduler.policy", caf::atom_from_string(policy));
  }
};

} // namespace

nlohmann::json run_job(job_config config, runtime_options rt) {
  auto threads = rt.threads;
  if (threads == 0)
    threads = std::max<std::size_t>(std::thread::hardware_concurrency(), 2);
  if (rt.scheduler != "sharing" && rt.scheduler != "stealing")
    throw std::invalid_argument("unknown scheduler policy " + rt.scheduler);
  job_system_config cfg{threads, rt.scheduler};
  caf::actor_system sys{cfg};
  return run_job_in(sys, std::move(config), rt.timeout);
}

nlohmann::json run_job_in(caf::actor_system& sys, job_config config,
                          std::chrono::seconds timeout) {
  // An algorithm with a driver of its own (Sandblaster) runs the job.
  if (config.algorithm)
    if (auto result = config.algorithm->run(sys, config, timeout))
      return std::move(*result);
  auto coord = sys.spawn(coordinator, std::move(config));
  std::string text, failure;
  {
    caf::scoped_actor self{sys};
    self->request(coord, timeout, messages::result_atom::value)
        .receive([&](std::string& result) { text = std::move(result); },
                 [&](caf::error& err) { failure = sys.render(err); });
  }
  if (!failure.empty()) {
    caf::anon_send_exit(coord, caf::exit_reason::user_shutdown);
    throw std::runtime_error("the job did not finish: " + failure);
  }
  return nlohmann::json::parse(text);
}

} // namespace troupe::actors
