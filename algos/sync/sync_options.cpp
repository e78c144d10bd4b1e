// Synchronous SGD's flags, their checks and its part of a job.

#include <caf/config_option_set.hpp>

#include "actors/coordinator.hpp"
#include "algos/server_settings.hpp"
#include "algos/sync/sync.hpp"

namespace troupe::algos {

std::string sync::summary() const {
  return "synchronous all-reduce over the shards";
}

std::shared_ptr<algorithm> sync::clone() const {
  return std::make_shared<sync>(*this);
}

void sync::bind(caf::config_option_set& set) {
  caf::string_view g = "?sync";
  set.add(server_optimizer, g, "server-optimizer",
          "optimizer on the shards: sgd | momentum | nesterov | adagrad | "
          "adam (default: --optimizer)");
  compression_settings.bind(set, g, "the gradient pushes");
  aggregation_settings.bind(set, g);
}

void sync::check_flags(const job_options& o,
                       const std::set<std::string>& given) const {
  check_server_optimizer(server_optimizer);
  compression_settings.check(given);
  aggregation_settings.check(given, o.workers);
}

void sync::resolve(job_options& o, double model_lr) const {
  algorithm::resolve(o, model_lr);
}

data_layout sync::layout() const noexcept {
  return data_layout::shared_stream; // a round is one global batch
}

void sync::build(job_build& b) {
  auto& job = b.job;
  job.policy.compress = compression_settings.options();
  job.policy.layers = b.layers;
  if (!server_optimizer.empty())
    job.server.optimizer.name = server_optimizer;
}

} // namespace troupe::algos
