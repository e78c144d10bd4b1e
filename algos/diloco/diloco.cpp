#include "algos/diloco/diloco.hpp"

#include <algorithm>

#include "actors/coordinator.hpp"
#include "algos/diloco/diloco_policy.hpp"

namespace troupe::algos {

double diloco_outer_lr(double lr, bool asynchronous,
                       std::uint32_t workers) noexcept {
  if (lr > 0)
    return lr;
  return asynchronous ? 1.0 / static_cast<double>(std::max(workers, 1u)) : 0.7;
}

std::string diloco_outer_optimizer(const std::string& name, bool asynchronous) {
  if (!name.empty())
    return name;
  return asynchronous ? "sgd" : "nesterov";
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
}

} // namespace troupe::algos
