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
    auto j = nlohmann::json::parse(spec);
    if (!j.is_object())
      throw std::invalid_argument("not a job spec: not a JSON object");
    // nlohmann converts a float to an integer field with a plain cast,
    // undefined for 1e30 (found by tests/fuzz/job_spec_fuzz.cpp): an
    // integer field takes an integer, an unsigned one no negative.
    static const nlohmann::json defaults = train_options{};
    for (const auto& [key, value] : j.items()) {
      auto d = defaults.find(key);
      if (d == defaults.end() || !d->is_number_integer())
        continue;
      if (!value.is_number_integer()
          || (d->is_number_unsigned() && !value.is_number_unsigned()))
        throw std::invalid_argument("not a job spec: " + key + " is "
                                    + value.dump().substr(0, 40)
                                    + ", not a count");
    }
    return j.get<train_options>();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("not a job spec: " + optim::sanitize(e.what()));
  }
}

} // namespace troupe::apps
