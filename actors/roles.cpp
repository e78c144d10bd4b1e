#include "actors/roles.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <caf/actor_cast.hpp>

#include "actors/leader_board.hpp"

namespace troupe::actors {

bool needs_shards(const job_config& job) noexcept {
  const auto& a = job.algo;
  return a == "downpour" || a == "sync" || a == "easgd"
         || (a == "shadow" && job.shadow.mode == "easgd");
}

bool is_peer_to_peer(const job_config& job) noexcept {
  return job.algo == "sgp" || job.algo == "dssync";
}

bool lingers(const job_config& job) noexcept {
  return job.algo == "lsgd" || job.algo == "shadow" || is_peer_to_peer(job);
}

std::vector<std::uint32_t> worker_groups(const job_config& job) {
  if (job.group_of.size() == job.workers)
    return job.group_of;
  return lsgd_groups(job.workers, job.lsgd.groups, job.placement.worker_node);
}

shadow_syncer_config syncer_config_of(const job_config& job, std::uint32_t g,
                                      std::vector<worker_actor> members,
                                      std::vector<shard_ref> shards) {
  shadow_syncer_config sc;
  sc.index = g;
  for (auto& m : members)
    sc.members.push_back(caf::actor_cast<shadow_member_actor>(m));
  sc.shards = std::move(shards);
  sc.opts = job.shadow;
  sc.workers = job.workers;
  sc.init = job.init;
  sc.timeout = job.request_timeout;
  return sc;
}

std::vector<optim::slice> shard_ranges(const job_config& job) {
  if (job.shards == 0)
    return {}; // lsgd, sgp, dssync: no parameter server
  return optim::balanced_split(job.init->size(), job.shards);
}

void check_algorithm(const job_config& job) {
  auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  auto in = [](double x, double lo, double hi) { return x >= lo && x <= hi; };
  const auto& a = job.algo;
  if (a != "downpour" && a != "sync" && a != "easgd" && a != "lsgd"
      && a != "sgp" && a != "dssync" && a != "shadow")
    bad("unknown algorithm '" + a
        + "' (downpour, sync, easgd, lsgd, sgp, dssync or shadow)");
  bool local = a == "lsgd" || a == "sgp" || a == "dssync" || a == "shadow";
  if (local) {
    // A rate of 0 is allowed where the workers average without a server
    // (pure averaging: algorithms.md §5 T1, §6 T1, §7 T2).
    bool zero_ok = a != "lsgd";
    if (!(job.local_lr > 0 || (zero_ok && job.local_lr == 0))
        || !std::isfinite(job.local_lr))
      bad(a + ": the learning rate must be positive");
    optim::make_optimizer<float>(job.local_optimizer, 1);
  }
  if (a == "sgp" && (job.peer.peers < 1 || job.peer.peers > 2))
    bad("sgp: peers must be 1 or 2");
  if (a == "dssync" && job.peer.group_size < 2)
    bad("dssync: the group size must be at least 2");
  if (a == "shadow") {
    const auto& o = job.shadow;
    if (o.mode != "easgd" && o.mode != "ma" && o.mode != "bmuf")
      bad("shadow: unknown synchronization '" + o.mode
          + "' (easgd, ma or bmuf)");
    auto alpha = shadow_alpha(o, job.workers);
    if (o.mode == "easgd" && !(alpha > 0 && alpha < 1))
      bad("shadow: alpha must be in (0, 1)");
    auto eta = shadow_block_momentum(o, job.workers);
    if (o.mode == "bmuf"
        && (!in(eta, 0, 0.999999) || !(o.block_lr > 0) || o.block_lr > 10))
      bad("shadow: bmuf needs a block momentum in [0, 1) and a block rate "
          "in (0, 10]");
  }
  if (a == "easgd") {
    const auto& e = job.easgd;
    if (e.tau == 0)
      bad("easgd: tau must be at least 1");
    if (!(e.lr > 0) || !std::isfinite(e.lr))
      bad("easgd: the learning rate must be positive");
    auto alpha = easgd_alpha(job);
    if (!(alpha > 0 && alpha < 1))
      bad("easgd: alpha must be in (0, 1)");
    if (alpha * job.workers >= 1)
      bad("easgd: beta = workers * alpha = "
          + std::to_string(alpha * job.workers)
          + " must be below 1 (the center overshoots)");
    if (!in(e.momentum, 0, 0.999999))
      bad("easgd: the momentum must be in [0, 1)");
  }
  if (a == "lsgd") {
    const auto& l = job.lsgd;
    if (!in(l.lambda, 0, 1) || !in(l.lambda_g, 0, 1))
      bad("lsgd: lambda and lambda_g must be in [0, 1]");
    if (l.tau == 0 || l.tau_g < l.tau)
      bad("lsgd: need 1 <= tau <= tau_g");
    if (l.score_window == 0)
      bad("lsgd: the score window must be at least 1");
  }
  if ((a == "easgd" || local) && job.local_schedule)
    optim::schedule{*job.local_schedule};
}

double easgd_alpha(const job_config& job) noexcept {
  if (job.easgd.alpha > 0)
    return job.easgd.alpha;
  return 0.9 / static_cast<double>(std::max<std::uint32_t>(job.workers, 1));
}

parameter_shard_config shard_config(const job_config& job, std::uint32_t i) {
  auto ranges = shard_ranges(job);
  if (i >= ranges.size())
    throw std::out_of_range("shard " + std::to_string(i) + " of a job with "
                            + std::to_string(ranges.size()) + " shards");
  parameter_shard_config sc;
  sc.index = i;
  sc.range = ranges[i];
  sc.init = job.init;
  sc.store = job.server;
  if (job.algo == "easgd" || job.algo == "shadow") {
    // The center adds each worker's elastic difference e, sent negated as a
    // gradient: x_c <- x_c - 1 * (-e).
    sc.store = {};
    sc.store.optimizer = {"sgd", 0, 0};
    sc.store.lr = 1;
    sc.store.histogram_buckets = job.server.histogram_buckets;
  }
  sc.mode = job.algo == "sync" ? shard_mode::sync : shard_mode::async;
  sc.staleness_bound = job.staleness_bound;
  return sc;
}

worker_config worker_config_of(const job_config& job, messages::worker_id w,
                               std::vector<shard_ref> shards,
                               coordinator_actor coordinator) {
  if (w >= job.workers)
    throw std::out_of_range("worker " + std::to_string(w) + " of a job with "
                            + std::to_string(job.workers) + " workers");
  worker_config wc;
  wc.id = w;
  wc.make_replica = [f = job.make_replica, w] { return f(w); };
  if (job.algo == "easgd") {
    auto opts = job.easgd;
    opts.alpha = easgd_alpha(job);
    wc.make_policy = [shards = std::move(shards), opts,
                      sched = job.local_schedule](std::size_t params) {
      return make_easgd_policy(shards, opts, params, sched);
    };
    wc.yield_steps = true;
  } else if (job.algo == "lsgd") {
    wc.make_policy = [opt = job.local_optimizer, lr = job.local_lr,
                      sched = job.local_schedule,
                      window = job.lsgd.score_window](std::size_t params) {
      return make_lsgd_policy(opt, lr, params, sched, window);
    };
    wc.yield_steps = true;
  } else if (job.algo == "shadow") {
    // Local steps that never wait; the syncer corrects in the background.
    wc.make_policy = [opt = job.local_optimizer, lr = job.local_lr,
                      sched = job.local_schedule](std::size_t params) {
      return make_shadow_policy(opt, lr, params, sched);
    };
    wc.yield_steps = true;
  } else if (is_peer_to_peer(job)) {
    auto opts = job.peer;
    opts.workers = job.workers;
    opts.optimizer = job.local_optimizer;
    opts.lr = job.local_lr;
    opts.schedule = job.local_schedule;
    opts.init = job.init;
    bool sgp = job.algo == "sgp";
    wc.make_policy = [opts, sgp](std::size_t params) {
      return sgp ? make_sgp_policy(opts, params)
                 : make_dssync_policy(opts, params);
    };
    wc.yield_steps = true;
  } else {
    auto policy = job.policy;
    policy.sync = job.algo == "sync";
    wc.make_policy = [shards = std::move(shards), policy](std::size_t params) {
      return make_ps_policy(shards, policy, params);
    };
  }
  wc.linger = lingers(job);
  wc.coordinator = std::move(coordinator);
  wc.max_steps = job.steps_per_worker;
  wc.request_timeout = job.request_timeout;
  wc.adopt_data = job.adopt_data;
  wc.divergence_steps = job.divergence_steps;
  if (w < job.step_counters.size())
    wc.step_counter = job.step_counters[w];
  if (w < job.step_delays.size())
    wc.step_delay = job.step_delays[w];
  return wc;
}

std::vector<shard_ref> shard_refs(const job_config& job,
                                  const std::vector<caf::actor>& handles) {
  auto ranges = shard_ranges(job);
  if (handles.size() != ranges.size())
    throw std::invalid_argument(std::to_string(handles.size())
                                + " shard handles for a job with "
                                + std::to_string(ranges.size()) + " shards");
  std::vector<shard_ref> refs;
  for (std::size_t i = 0; i < ranges.size(); ++i)
    refs.push_back(
        {caf::actor_cast<parameter_shard_actor>(handles[i]), ranges[i]});
  return refs;
}

} // namespace troupe::actors
