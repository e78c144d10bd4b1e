// Parle's flags, their checks and its part of a job.

#include <cmath>
#include <stdexcept>

#include <caf/config_option_set.hpp>

#include "actors/coordinator.hpp"
#include "algos/parle/parle.hpp"

namespace troupe::algos {

std::string parle::summary() const {
  return "replicas of Entropy-SGD coupled to their mean by scoped elastic "
         "forces (Parle)";
}

std::shared_ptr<algorithm> parle::clone() const {
  return std::make_shared<parle>(*this);
}

void parle::bind(caf::config_option_set& set) {
  caf::string_view g = "?parle";
  set.add(round_steps, g, "inner-steps",
          "Entropy-SGD steps a round, L (default 25)")
      .add(gamma, g, "gamma",
           "the inner steps' pull toward the anchor, at the start (default "
           "0.01; grows to 1)")
      .add(rho, g, "rho",
           "the anchors' elastic force toward their mean, at the start, "
           "times L and the workers (default 0.01; grows to 10)")
      .add(scoping, g, "scoping",
           "gamma and rho grow by e^s an epoch (default 0.5)");
}

void parle::check_flags(const job_options& o,
                        const std::set<std::string>& given) const {
  round_algorithm::check_flags(o, given);
  auto fail
      = [](const std::string& what) { throw std::invalid_argument(what); };
  if (!(gamma > 0 && gamma <= 1))
    fail("--gamma must be in (0, 1]");
  if (!(rho > 0 && rho <= 10))
    fail("--rho must be in (0, 10]");
  if (!(scoping >= 0 && scoping <= 10))
    fail("--scoping must be in [0, 10]");
}

void parle::build(job_build& b) {
  local = local_steps::of(b);
  rounds_per_epoch = static_cast<double>(b.batches_per_epoch)
                     / static_cast<double>(round_steps);
  // The shards hold the replicas' mean: outer SGD at 1 on the pushes
  // x - x_a.
  auto& s = b.job.server;
  s.optimizer = {"sgd", 0, 0};
  s.lr = 1;
  s.lr_schedule.reset();
  s.staleness_aware = false;
}

} // namespace troupe::algos
