// Synchronous SGD's flags, their checks and its part of a job.

#include <stdexcept>

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
          "adam | novograd (default: --optimizer)");
  compression_settings.bind(set, g, "the gradient pushes");
  aggregation_settings.bind(set, g);
  pipeline_settings.bind(set, g);
}

void sync::check_flags(const job_options& o,
                       const std::set<std::string>& given) const {
  check_server_optimizer(server_optimizer);
  compression_settings.check(given);
  aggregation_settings.check(given, o.workers);
  pipeline_settings.check(o, given,
                          {"compress", "bin-fc", "bin-conv", "topk-fc",
                           "topk-conv", "aggregation"});
  if (pipeline_settings.on()
      && pipeline_settings.parsed_schedule()
             == optim::pipeline_schedule::one_f_one_b)
    throw std::invalid_argument(
        "--pipeline=1f1b pushes every micro-batch, and a synchronous round "
        "takes one push per replica; use --pipeline=gpipe");
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
  build_pipeline(b);
}

} // namespace troupe::algos
