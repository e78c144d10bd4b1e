#include "algos/dssync/dssync.hpp"

#include <stdexcept>

#include "actors/coordinator.hpp"
#include "algos/dssync/dssync_policy.hpp"
#include "algos/local_steps.hpp"
#include "algos/sgp/sgp.hpp"

namespace troupe::algos {

std::string dssync::name() const {
  return "dssync";
}

actors::shard_plan dssync::plan(const actors::job_config&) const {
  return actors::shard_plan::none;
}

void dssync::check(const actors::job_config&) const {
  // A rate of 0 is pure averaging (algorithms.md §7 T2).
  local.check("dssync", true);
  if (settings.group_size < 2)
    throw std::invalid_argument("dssync: the group size must be at least 2");
}

void dssync::configure_worker(const actors::job_config& job,
                              actors::worker_config& config,
                              std::vector<actors::shard_ref>) const {
  config.make_policy
      = [opts = peer_options(job, settings, local)](std::size_t params) {
          return actors::make_dssync_policy(opts, params);
        };
  config.yield_steps = true;
}

bool dssync::peer_to_peer() const noexcept {
  return true;
}

bool dssync::lingers() const noexcept {
  return true; // the workers' mean is evaluated
}

void dssync::report(const actors::coordinator_state& st,
                    nlohmann::json& out) const {
  auto q = settings;
  q.workers = st.config.workers;
  out["dssync"] = {{"optimizer", local.optimizer.name},
                   {"lr", local.lr},
                   {"evaluated", "mean of the workers' models"},
                   {"group_size", q.group_size},
                   {"schedule", actors::digit_schedule(q)   ? "digit"
                                : q.group_size >= q.workers ? "one group"
                                                            : "random"}};
}

void dssync::report_worker(const messages::worker_stats& stats,
                           nlohmann::json& out) const {
  report_mixes(stats, out);
}

} // namespace troupe::algos
