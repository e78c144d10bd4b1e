// DiLoCo's flags, their checks and its part of a job.

#include <cmath>
#include <stdexcept>

#include <caf/config_option_set.hpp>

#include "actors/coordinator.hpp"
#include "algos/diloco/diloco.hpp"
#include "algos/server_settings.hpp"

namespace troupe::algos {

std::string diloco::summary() const {
  return "rounds of local steps, outer Nesterov on the shards (DiLoCo)";
}

std::shared_ptr<algorithm> diloco::clone() const {
  return std::make_shared<diloco>(*this);
}

void diloco::bind(caf::config_option_set& set) {
  caf::string_view g = "?diloco";
  set.add(round_steps, g, "inner-steps", "local steps a round, H (default 20)")
      .add(outer_optimizer, g, "outer-optimizer",
           "optimizer on the shards: nesterov (default; asynchronous sgd) | "
           "sgd | delayed-nesterov (for asynchronous rounds) | momentum | "
           "adam | ...; sgd at --outer-lr=1 averages")
      .add(outer_lr, g, "outer-lr",
           "the outer rate (default 0.7; asynchronous sgd 1 / workers)")
      .add(outer_momentum, g, "outer-momentum",
           "the outer momentum (default 0.9; delayed-nesterov 0.5)")
      .add(outer_delay, g, "outer-delay",
           "delayed-nesterov: pseudo-gradients a momentum update, N "
           "(default: the workers)")
      .add(outer_activation, g, "outer-activation",
           "delayed-nesterov: the momentum's share applied between its "
           "updates, c in [0, 1] (default 0)")
      .add(asynchronous, g, "asynchronous",
           "the shards apply each pseudo-gradient as it arrives; no worker "
           "waits for the round");
}

void diloco::check_flags(const job_options& o,
                         const std::set<std::string>& given) const {
  round_algorithm::check_flags(o, given);
  auto fail
      = [](const std::string& what) { throw std::invalid_argument(what); };
  if (!(outer_lr >= 0 && outer_lr <= 100) || !std::isfinite(outer_lr))
    fail("--outer-lr must be in [0, 100] (0: the default)");
  if (!(outer_momentum < 1) || (outer_momentum < 0 && outer_momentum != -1))
    fail("--outer-momentum must be in [0, 1)");
  check_server_optimizer(outer_optimizer, "--outer-optimizer");
  auto name = diloco_outer_optimizer(outer_optimizer, asynchronous);
  for (const char* flag : {"outer-delay", "outer-activation"})
    if (given.count(flag) && name != "delayed-nesterov")
      fail(std::string{"--"} + flag
           + " is delayed-nesterov's: give --outer-optimizer=delayed-nesterov "
             "(this job's is "
           + name + ")");
  if (outer_delay > 1'000'000)
    fail("--outer-delay must be at most 1000000 (0: the workers)");
  if (!(outer_activation >= 0 && outer_activation <= 1))
    fail("--outer-activation must be in [0, 1]");
}

void diloco::build(job_build& b) {
  local = local_steps::of(b);
  auto& s = b.job.server;
  s.optimizer.name = diloco_outer_optimizer(outer_optimizer, asynchronous);
  s.optimizer.momentum
      = diloco_outer_momentum(outer_momentum, s.optimizer.name);
  s.optimizer.weight_decay = 0;
  s.optimizer.delay = outer_delay > 0 ? outer_delay : b.job.workers;
  s.optimizer.activation = outer_activation;
  s.lr = diloco_outer_lr(outer_lr, s.optimizer.name, asynchronous,
                         b.job.workers);
  s.lr_schedule.reset(); // the schedule is the inner steps'
  s.staleness_aware = false;
}

} // namespace troupe::algos
