#include "algos/parle/parle.hpp"

#include "actors/coordinator.hpp"
#include "algos/parle/parle_policy.hpp"

namespace troupe::algos {

std::string parle::name() const {
  return "parle";
}

double parle::scaled_rho(std::uint32_t workers) const noexcept {
  return rho * static_cast<double>(round_steps) * workers;
}

void parle::configure_worker(const actors::job_config& job,
                             actors::worker_config& config,
                             std::vector<actors::shard_ref> shards) const {
  parle_policy_options opts;
  opts.rounds = rounds(job);
  opts.gamma = gamma;
  opts.rho = scaled_rho(job.workers);
  opts.scoping = scoping;
  opts.rounds_per_epoch = rounds_per_epoch;
  config.make_policy = [shards = std::move(shards),
                        opts = std::move(opts)](std::size_t params) {
    return make_parle_policy(shards, opts, params);
  };
}

void parle::report(const actors::coordinator_state& st,
                   nlohmann::json& out) const {
  out["parle"] = {{"inner_steps", round_steps},
                  {"gamma", gamma},
                  {"rho", scaled_rho(st.config.workers)},
                  {"scoping", scoping},
                  {"rounds_per_epoch", rounds_per_epoch}};
}

} // namespace troupe::algos
