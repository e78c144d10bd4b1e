// EASGD's flags, their checks and its part of a job.

#include <stdexcept>

#include <caf/config_option_set.hpp>

#include "actors/coordinator.hpp"
#include "algos/easgd/easgd.hpp"
#include "algos/local_steps.hpp"

namespace troupe::algos {

std::string easgd::summary() const {
  return "elastic averaging with a center on the shards";
}

std::shared_ptr<algorithm> easgd::clone() const {
  return std::make_shared<easgd>(*this);
}

void easgd::bind(caf::config_option_set& set) {
  caf::string_view g = "?easgd";
  set.add(tau, g, "tau", "steps between exchanges with the center (default 4)")
      .add(alpha, g, "alpha", "moving rate alpha (default 0.9 / workers)")
      .add(easgd_momentum, g, "easgd-momentum",
           "EAMSGD's Nesterov momentum delta (default 0; the paper 0.99 with "
           "a smaller --lr)");
}

void easgd::check_flags(const job_options& o,
                        const std::set<std::string>&) const {
  auto fail
      = [](const std::string& what) { throw std::invalid_argument(what); };
  if (tau < 1 || tau > 1000000)
    fail("--tau must be in [1, 1000000]");
  if (!(alpha >= 0 && alpha < 1))
    fail("--alpha must be in [0, 1) (0: 0.9 / workers)");
  if (alpha * static_cast<double>(o.workers) >= 1)
    fail("--alpha times --workers (the center's rate beta) must be below 1, "
         "or the center overshoots");
  if (!(easgd_momentum >= 0 && easgd_momentum < 1))
    fail("--easgd-momentum must be in [0, 1)");
}

void easgd::resolve(job_options& o, double model_lr) const {
  algorithm::resolve(o, model_lr);
  if (o.lr == 0 && easgd_momentum == 0)
    o.lr = 4 * model_lr; // plain SGD steps, as Downpour's
}

void easgd::build(job_build& b) {
  local = local_steps::of(b);
  settings.tau = tau;
  settings.alpha = alpha;
  settings.momentum = easgd_momentum;
  settings.lr = b.options.lr;
}

} // namespace troupe::algos
