// The job spec a coordinator sends to its nodes: the training options as
// JSON, so a node builds exactly the job the coordinator describes.

#include <stdexcept>

#include "apps/train_command.hpp"
#include "optim/quote.hpp"

namespace troupe::apps {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(
    train_options, algo, model, data, standardize, workers, shards, batch, lr,
    seed, epochs, max_seconds, target_accuracy, max_steps, train_examples,
    optimizer, momentum, weight_decay, schedule, lr_decay, lr_step_epochs,
    warmup_epochs, eval_every, n_fetch, n_push, staleness_bound,
    staleness_aware, warm_start_steps, server_optimizer, local_lr, threads,
    request_timeout, tau, alpha, easgd_momentum, groups, lambda, lambda_g,
    tau_g, score_window, peers, overlap, group_size, shadow, shadow_period,
    block_momentum, block_lr, compress, bin_fc, bin_conv, topk_fc, topk_conv,
    gossip_gamma, portions, memory, gradient_tolerance, backups)

std::string to_spec(const train_options& o) {
  return nlohmann::json(o).dump();
}

train_options from_spec(const std::string& spec) {
  try {
    return nlohmann::json::parse(spec).get<train_options>();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("not a job spec: " + optim::sanitize(e.what()));
  }
}

} // namespace troupe::apps
