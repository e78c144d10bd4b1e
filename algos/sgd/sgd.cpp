#include "algos/sgd/sgd.hpp"

#include <stdexcept>

namespace troupe::algos {

std::string sgd::summary() const {
  return "the default: one worker, no actors";
}

std::shared_ptr<algorithm> sgd::clone() const {
  return std::make_shared<sgd>(*this);
}

void sgd::check_flags(const job_options& o,
                      const std::set<std::string>&) const {
  if (o.workers != 1 || o.shards != 1)
    throw std::invalid_argument(
        "trains one worker without parameter shards; got "
        "--workers="
        + std::to_string(o.workers) + " --shards=" + std::to_string(o.shards));
}

runner sgd::run_by() const noexcept {
  return runner::single_loop;
}

std::string sgd::name() const {
  return "sgd";
}

actors::shard_plan sgd::plan(const actors::job_config&) const {
  return actors::shard_plan::none;
}

void sgd::configure_worker(const actors::job_config&, actors::worker_config&,
                           std::vector<actors::shard_ref>) const {
  throw std::logic_error("sgd: a training loop without actors");
}

} // namespace troupe::algos
