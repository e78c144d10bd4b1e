#include "algos/algorithm.hpp"

#include <algorithm>
#include <cmath>

namespace troupe::algos {

namespace {

std::size_t epochs_in(double epochs, double per_epoch) {
  return static_cast<std::size_t>(std::llround(epochs * per_epoch));
}

} // namespace

optim::schedule_options job_build::server_schedule(double per_epoch) const {
  optim::schedule_options s;
  s.name = options.schedule;
  s.base_lr = options.lr;
  s.gamma = options.lr_decay;
  s.step_size
      = std::max<std::size_t>(epochs_in(options.lr_step_epochs, per_epoch), 1);
  s.total_steps
      = std::max<std::size_t>(epochs_in(options.epochs, per_epoch), 1);
  s.warmup_steps = epochs_in(options.warmup_epochs, per_epoch);
  return s;
}

optim::schedule_options job_build::local_schedule() const {
  auto per_worker = static_cast<double>(batches_per_epoch);
  auto s = server_schedule(per_worker);
  s.total_steps = std::max<std::size_t>(steps_per_worker, 1);
  return s;
}

void algorithm::bind(caf::config_option_set&) {
  // no flags of its own
}

void algorithm::check_flags(const job_options&,
                            const std::set<std::string>&) const {
  // nothing to check
}

void algorithm::resolve(job_options& o, double) const {
  if (o.optimizer.empty())
    o.optimizer = "momentum";
  if (o.weight_decay == -1)
    o.weight_decay = 0;
}

std::vector<std::string> algorithm::ignored_flags() const {
  return {};
}

data_layout algorithm::layout() const noexcept {
  return data_layout::parts;
}

runner algorithm::run_by() const noexcept {
  return runner::coordinator;
}

bool algorithm::uses_shards(const job_options&) const {
  return true;
}

void algorithm::build(job_build&) const {
  // the job's common settings suffice
}

void algorithm::add_roles(actors::role_registry&) const {
  // only the shared roles
}

} // namespace troupe::algos
