// Downpour's flags, their checks and its part of a job.

#include <algorithm>
#include <stdexcept>

#include <caf/config_option_set.hpp>

#include "actors/coordinator.hpp"
#include "algos/downpour/downpour.hpp"
#include "algos/server_settings.hpp"

namespace troupe::algos {

std::string downpour::summary() const {
  return "asynchronous parameter server";
}

std::shared_ptr<algorithm> downpour::clone() const {
  return std::make_shared<downpour>(*this);
}

void downpour::bind(caf::config_option_set& set) {
  caf::string_view g = "?downpour";
  set.add(n_fetch, g, "n-fetch", "fetch parameters every N steps")
      .add(n_push, g, "n-push",
           "push the summed gradient every N steps (lower --lr about N-fold)")
      .add(staleness_bound, g, "staleness-bound",
           "SSP bound s; a worker waits while it is more than s steps ahead "
           "of the slowest (-1: none)")
      .add(staleness_aware, g, "staleness-aware",
           "divide each push's server rate by its staleness")
      .add(warm_steps, g, "warm-start-steps",
           "worker 0 trains alone for N steps first")
      .add(server_optimizer, g, "server-optimizer",
           "optimizer on the shards: sgd (default, with --lr min(4, 8 / "
           "workers) times the model's default) | momentum | nesterov | "
           "adagrad | adam | novograd")
      .add(local_lr, g, "local-lr",
           "replica rate between fetches (default: 0 with --n-fetch=1, else "
           "--lr)")
      .add(prefetch, g, "prefetch",
           "send a step's fetch when the step before it starts, so it "
           "travels while that step computes: one step staler (default "
           "false; not under --staleness-bound)");
  compression_settings.bind(set, g, "the gradient pushes");
  aggregation_settings.bind(set, g);
  set.add(agg_buffer, g, "agg-buffer",
          "with a robust --aggregation: pushes (one per worker) a shard's "
          "round combines (default: --workers)")
      .add(agg_deadline, g, "agg-deadline",
           "with a robust --aggregation: seconds after which a round closes "
           "with the pushes it has (default 1)");
  pipeline_settings.bind(set, g);
}

void downpour::check_flags(const job_options& o,
                           const std::set<std::string>& given) const {
  auto fail
      = [](const std::string& what) { throw std::invalid_argument(what); };
  if (n_fetch < 1 || n_push < 1)
    fail("--n-fetch and --n-push must be at least 1");
  if (staleness_bound < -1)
    fail("--staleness-bound must be -1 (none) or at least 0");
  if (staleness_bound >= 0 && (n_push != 1 || n_fetch != 1))
    fail("under --staleness-bound a worker's clock advances with every push "
         "and fetch; --n-fetch and --n-push must be 1");
  check_server_optimizer(server_optimizer);
  pipeline_settings.check(o, given,
                          {"n-fetch", "n-push", "local-lr", "prefetch",
                           "warm-start-steps", "compress", "bin-fc", "bin-conv",
                           "topk-fc", "topk-conv", "aggregation"});
  if (pipeline_settings.on() && o.shard_replicas > 0)
    fail("--shard-replicas does not combine with --stages (a stage keeps no "
         "log of its pushes to send again)");
  compression_settings.check(given);
  aggregation_settings.check(given, o.workers);
  if (!buffered() && (given.count("agg-buffer") || given.count("agg-deadline")))
    fail("--agg-buffer and --agg-deadline apply with a robust --aggregation "
         "(not mean)");
  if (buffered()) {
    if (staleness_bound >= 0)
      fail("--aggregation=" + aggregation_settings.rule
           + " buffers rounds of pushes; it does not combine with "
             "--staleness-bound");
    if (o.shard_replicas > 0)
      fail("--aggregation=" + aggregation_settings.rule
           + " does not combine with --shard-replicas (a backup would not "
             "see the rounds)");
    if (agg_buffer > o.workers)
      fail("--agg-buffer=" + std::to_string(agg_buffer) + " is above --workers="
           + std::to_string(o.workers) + ": a round holds one push per worker");
    if (!(agg_deadline > 0 && agg_deadline <= 3600))
      fail("--agg-deadline must be in (0, 3600] seconds");
  }
}

void downpour::resolve(job_options& o, double model_lr) const {
  algorithm::resolve(o, model_lr);
  // Buffered rounds apply one combined gradient per round: the model's own
  // rate, as sync does.
  if (server_optimizer.empty() && o.lr == 0)
    o.lr = buffered() ? model_lr : async_server_lr_factor(o.workers) * model_lr;
}

void downpour::build(job_build& b) {
  // Its own settings are its flags (warm start, staleness bound); the
  // shared worker policy and the shards' store take the rest.
  const auto& o = b.options;
  auto& job = b.job;
  job.policy.compress = compression_settings.options();
  job.policy.layers = b.layers;
  job.policy.n_fetch = n_fetch;
  job.policy.n_push = n_push;
  job.policy.local_optimizer.name = "sgd";
  job.policy.local_lr = local_lr >= 0 ? local_lr : (n_fetch > 1 ? o.lr : 0.0);
  job.policy.prefetch = prefetch && staleness_bound < 0;
  job.server.optimizer.name
      = server_optimizer.empty() ? "sgd" : server_optimizer;
  // One server update per push interval of any worker.
  auto rounds = buffered() ? static_cast<double>(agg_buffer > 0 ? agg_buffer
                                                                : o.workers)
                           : 1.0;
  job.server.lr_schedule = b.server_schedule(
      static_cast<double>(b.batches) / static_cast<double>(n_push) / rounds);
  job.server.staleness_aware = staleness_aware;
  // A worker that computes several steps in a row gets a thread of its own
  // (actors/coordinator.hpp, detached_workers).
  job.detached_workers = n_fetch > 1;
  build_pipeline(b);
}

} // namespace troupe::algos
