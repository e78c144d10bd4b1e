#include "algos/dssync/dssync.hpp"

#include <stdexcept>

#include "actors/coordinator.hpp"
#include "algos/dssync/dssync_policy.hpp"
#include "algos/local_steps.hpp"
#include "algos/sgp/sgp.hpp"
#include "optim/gossip.hpp"

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
  auto opts = peer_options(job, settings, local);
  opts.any_peer = any_peer(job);
  if (!opts.any_peer)
    opts.neighbours = peer_ranks(job, config.id);
  config.make_policy = [opts = std::move(opts),
                        steps = job.steps_per_worker](std::size_t params) {
    return make_dssync_policy(opts, params, steps);
  };
  config.yield_steps = true;
}

bool dssync::peer_to_peer() const noexcept {
  return true;
}

std::vector<messages::worker_id>
dssync::peer_ranks(const actors::job_config& job, messages::worker_id w) const {
  auto opts = settings;
  opts.workers = job.workers;
  if (digit_schedule(opts))
    return optim::digit_neighbours(w, opts.workers, opts.group_size);
  return algorithm::peer_ranks(job, w); // one group, or random groups
}

bool dssync::any_peer(const actors::job_config& job) const {
  auto opts = settings;
  opts.workers = job.workers;
  return !digit_schedule(opts) && opts.group_size < opts.workers;
}

bool dssync::lingers() const noexcept {
  return true; // the workers' mean is evaluated
}

bool dssync::checkpointable() const noexcept {
  return true;
}

namespace {

/// DS-Sync's run: no roles; a worker waits for its group after its last
/// step's computation, where it cannot pause (a paused member would hold it
/// until the request timeout), so a checkpoint within the last steps is
/// declined.
class dssync_run : public actors::algorithm_run {
public:
  void quiesce(actors::coordinator_ptr self,
               std::function<void(std::string)> done) override {
    // The coordinator's counts lag the workers by the progress messages
    // in flight; a group waits for its slowest member, so none is more
    // than a few rounds ahead.
    constexpr std::uint64_t margin = 4;
    const auto& st = self->state;
    for (std::size_t w = 0; w < st.quota.size(); ++w)
      if (w < st.worker_steps.size()
          && st.worker_steps[w] + margin >= st.quota[w])
        return done("DS-Sync worker " + std::to_string(w)
                    + " is within its last steps");
    done({});
  }
};

} // namespace

std::unique_ptr<actors::algorithm_run>
dssync::start(const actors::job_config&) const {
  return std::make_unique<dssync_run>();
}

void dssync::report(const actors::coordinator_state& st,
                    nlohmann::json& out) const {
  auto q = settings;
  q.workers = st.config.workers;
  out["dssync"] = {{"optimizer", local.optimizer.name},
                   {"lr", local.lr},
                   {"evaluated", evaluated_mean(st.config)},
                   {"mixing", mixing_report(q)},
                   {"group_size", q.group_size},
                   {"schedule", digit_schedule(q)           ? "digit"
                                : q.group_size >= q.workers ? "one group"
                                                            : "random"}};
}

void dssync::report_worker(const messages::worker_stats& stats,
                           nlohmann::json& out) const {
  report_mixes(stats, out);
}

} // namespace troupe::algos
