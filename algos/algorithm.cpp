#include "algos/algorithm.hpp"

#include <algorithm>
#include <cmath>

#include "actors/coordinator.hpp"
#include "optim/model_spec.hpp"

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

void algorithm::build(job_build&) {
  // the job's common settings suffice
}

std::string algorithm::servers(const actors::job_config& job) const {
  if (job.shards == 0)
    return "no shards";
  return std::to_string(job.shards) + (job.shards == 1 ? " shard" : " shards");
}

std::string algorithm::describe(const job_build& b) const {
  const auto& o = b.options;
  auto data = b.train ? b.train->name : o.data;
  auto params = b.job.init ? b.job.init->size() : 0;
  return name() + " with " + std::to_string(b.job.workers)
         + (b.job.workers == 1 ? " worker and " : " workers and ")
         + servers(b.job) + ", " + optim::model_label(o.model) + " on " + data
         + " (" + std::to_string(b.examples) + " examples, "
         + std::to_string(params) + " parameters), "
         + std::to_string(b.steps_per_worker) + " steps of batch "
         + std::to_string(o.batch) + " per worker, seed "
         + std::to_string(o.seed);
}

void algorithm::complete_result(nlohmann::json&, const optim::dataset&,
                                std::vector<float>&) const {
  // the coordinator's report is complete
}

void algorithm::add_roles(actors::role_registry&) const {
  // only the shared roles
}

} // namespace troupe::algos
