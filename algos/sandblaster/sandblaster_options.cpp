// Sandblaster's flags and their checks (its run is built by
// sandblaster_job.cpp).

#include <cmath>
#include <stdexcept>

#include <caf/config_option_set.hpp>

#include "actors/coordinator.hpp"
#include "algos/sandblaster/sandblaster.hpp"
#include "optim/batch_objective.hpp"
#include "optim/model_spec.hpp"

namespace troupe::algos {

std::string sandblaster::summary() const {
  return "Sandblaster L-BFGS: batch quasi-Newton over portions";
}

std::shared_ptr<algorithm> sandblaster::clone() const {
  return std::make_shared<sandblaster>(*this);
}

void sandblaster::bind(caf::config_option_set& set) {
  caf::string_view g = "?lbfgs";
  set.add(portions, g, "portions",
          "portions per batch, taken by idle workers (default: 8 per worker, "
          "at least 64)")
      .add(memory, g, "memory", "history pairs m (default 10)")
      .add(gradient_tolerance, g, "gradient-tolerance",
           "stop once the gradient norm is below (default 1e-6)")
      .add(backups, g, "backups",
           "backup copies of outstanding portions at the end of a pass "
           "(default true)");
}

void sandblaster::check_flags(const job_options& o,
                              const std::set<std::string>&) const {
  auto fail
      = [](const std::string& what) { throw std::invalid_argument(what); };
  if (memory < 1 || memory > 1000)
    fail("--memory must be in [1, 1000]");
  if (portions > 1000000)
    fail("--portions must be at most 1000000");
  if (!(gradient_tolerance >= 0) || !std::isfinite(gradient_tolerance))
    fail("--gradient-tolerance must be zero or positive");
  if (o.weight_decay < 0 && o.weight_decay != -1)
    fail("--weight-decay (the L2 penalty) must be zero or positive");
  try {
    if (!optim::deterministic_model(o.model))
      fail("--model=" + optim::model_label(o.model)
           + ": sandblaster minimizes a full-batch cross-entropy, which a "
             "model with dropout, batch_norm or another loss does not have");
  } catch (const std::invalid_argument& e) {
    if (std::string{e.what()}.rfind("--model", 0) == 0)
      throw;
    // an unknown model is refused by the common checks
  }
}

void sandblaster::resolve(job_options& o, double) const {
  // the step comes from the line search: no rate, optimizer or epochs
  if (o.weight_decay == -1)
    o.weight_decay = default_l2;
}

std::vector<std::string> sandblaster::ignored_flags() const {
  // The step comes from the line search; every iteration is a full-batch
  // step; it stops at --max-steps (iterations), --max-seconds or
  // --gradient-tolerance.
  return {"lr",
          "optimizer",
          "momentum",
          "schedule",
          "lr-decay",
          "lr-step-epochs",
          "warmup-epochs",
          "epochs",
          "target-accuracy",
          "eval-every"};
}

runner sandblaster::run_by() const noexcept {
  return runner::own_driver;
}

} // namespace troupe::algos
