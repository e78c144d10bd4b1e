#include "algos/diloco/diloco.hpp"

#include <algorithm>

#include "actors/coordinator.hpp"
#include "algos/diloco/diloco_policy.hpp"

namespace troupe::algos {

double diloco_outer_lr(double lr, const std::string& optimizer,
                       bool asynchronous, std::uint32_t workers) noexcept {
  if (lr > 0)
    return lr;
  if (asynchronous && optimizer != "delayed-nesterov")
    return 1.0 / static_cast<double>(std::max(workers, 1u));
  return 0.7;
}

std::string diloco_outer_optimizer(const std::string& name, bool asynchronous) {
  if (!name.empty())
    return name;
  return asynchronous ? "sgd" : "nesterov";
}

double diloco_outer_momentum(double momentum,
                             const std::string& optimizer) noexcept {
  if (momentum >= 0)
    return momentum;
  return optimizer == "delayed-nesterov" ? 0.5 : 0.9;
}

std::string diloco::name() const {
  return "diloco";
}

void diloco::configure_worker(const actors::job_config& job,
                              actors::worker_config& config,
                              std::vector<actors::shard_ref> shards) const {
  config.make_policy
      = [shards = std::move(shards), opts = rounds(job)](std::size_t params) {
          return make_diloco_policy(shards, opts, params);
        };
}

void diloco::report(const actors::coordinator_state& st,
                    nlohmann::json& out) const {
  const auto& o = st.config.server;
  out["diloco"] = {{"inner_steps", round_steps},
                   {"inner_optimizer", local.optimizer.name},
                   {"inner_lr", local.lr},
                   {"outer_optimizer", o.optimizer.name},
                   {"outer_lr", o.lr},
                   {"outer_momentum", o.optimizer.momentum},
                   {"asynchronous", asynchronous}};
  if (o.optimizer.name == "delayed-nesterov") {
    out["diloco"]["outer_delay"] = o.optimizer.delay;
    out["diloco"]["outer_activation"] = o.optimizer.activation;
  }
}

} // namespace troupe::algos
