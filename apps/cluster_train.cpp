#include "apps/cluster_train.hpp"

#include <cmath>
#include <numeric>

#include "actors/job.hpp"
#include "algos/registry.hpp"
#include "apps/cli.hpp"
#include "apps/data_source.hpp"
#include "apps/lbfgs_train.hpp"
#include "apps/run_report.hpp"
#include "net/cluster.hpp"
#include "net/monitor.hpp"
#include "optim/optimizer.hpp"
#include "optim/param_hash.hpp"
#include "optim/replica.hpp"
#include "optim/trainer.hpp"

namespace troupe::apps {

std::string fingerprint(const std::vector<float>& init,
                        const optim::train_test& data) {
  const auto& x = data.train.x;
  return "params " + std::to_string(init.size()) + " "
         + optim::hash_params(init.data(), init.size()) + ", train "
         + std::to_string(data.train.size()) + " "
         + optim::hash_params(x.data(), static_cast<std::size_t>(x.size()))
         + ", test " + std::to_string(data.test.size());
}

bool is_decentral_algo(const std::string& algo) {
  return algo == "sgp" || algo == "dssync" || algo == "shadow";
}

bool is_cluster_algo(const std::string& algo) {
  return algo == "downpour" || algo == "sync" || algo == "easgd"
         || algo == "lsgd" || algo == "lbfgs" || is_decentral_algo(algo);
}

optim::sequential<float> initial_model(const train_options& o,
                                       const optim::dataset& train) {
  auto model
      = optim::make_model<float>(o.model, train.sample_shape, train.classes);
  model.init(o.seed);
  if (o.shards > model.size())
    throw usage_error("troupe train: --shards=" + std::to_string(o.shards)
                      + " exceeds the model's " + std::to_string(model.size())
                      + " parameters");
  return model;
}

cluster_job prepare_cluster_job(const train_options& o,
                                optim::train_test loaded) {
  auto data = std::make_shared<const optim::train_test>(std::move(loaded));
  auto train = std::shared_ptr<const optim::dataset>(data, &data->train);
  std::size_t n = train->size();
  if (o.train_examples > 0)
    n = std::min<std::size_t>(n, o.train_examples);
  if (n < o.workers)
    throw usage_error("troupe train: " + std::to_string(o.workers)
                      + " workers need at least as many training examples");
  auto init_model = initial_model(o, *train);
  auto init = std::make_shared<const std::vector<float>>(
      init_model.params(), init_model.params() + init_model.size());

  bool sync = o.algo == "sync";
  auto workers = static_cast<std::uint32_t>(o.workers);
  std::vector<std::vector<std::size_t>> parts;
  std::vector<std::size_t> all(n);
  std::iota(all.begin(), all.end(), std::size_t{0});
  if (!sync) {
    parts = optim::shard_indices(*train, workers, optim::shard_mode::iid,
                                 o.seed, n);
  }
  // Every worker's step budget: epochs over its own part (sync: over the
  // shared stream of global batches).
  auto batches = [&](std::size_t examples) {
    return (examples + o.batch - 1) / o.batch;
  };
  std::size_t per_epoch
      = sync ? optim::batch_iterator{all, o.batch, o.seed,
                                     optim::batch_part{0, workers}}
                   .batches_per_epoch()
             : batches(parts[0].size());
  auto steps_per_worker = std::max<std::uint64_t>(
      static_cast<std::uint64_t>(std::llround(o.epochs * per_epoch)), 1);
  if (o.max_steps > 0)
    steps_per_worker = std::min<std::uint64_t>(steps_per_worker, o.max_steps);
  // Server updates per epoch: every worker's steps over one pass, divided by
  // the push interval (sync: one update per global batch).
  double updates_per_epoch
      = sync ? static_cast<double>(per_epoch)
             : static_cast<double>(batches(n)) / static_cast<double>(o.n_push);
  auto in_updates = [&](double epochs) {
    return static_cast<std::size_t>(std::llround(epochs * updates_per_epoch));
  };

  actors::job_config job;
  job.algorithm = algos::make_algorithm(o.algo);
  job.workers = workers;
  job.shards = static_cast<std::uint32_t>(o.shards);
  job.init = init;
  job.steps_per_worker = steps_per_worker;
  auto model_name = o.model;
  auto batch = o.batch;
  auto seed = o.seed;
  job.make_replica = [=](messages::worker_id w) {
    if (sync)
      return optim::make_model_replica(model_name, train, all, batch, seed,
                                       seed, optim::batch_part{w, workers});
    return optim::make_model_replica(model_name, train, parts[w], batch,
                                     seed + 7919 * (w + 1), seed);
  };
  auto eval_model = std::make_shared<optim::sequential<float>>(
      optim::make_model<float>(o.model, train->sample_shape, train->classes));
  job.evaluate = [eval_model, data, batch](const float* p, std::size_t size) {
    std::copy(p, p + size, eval_model->params());
    return optim::evaluate(*eval_model, data->test, batch);
  };
  job.eval_every_steps = std::max<std::uint64_t>(
      static_cast<std::uint64_t>(
          std::llround(o.eval_every * static_cast<double>(batches(n)))),
      1);
  job.target_accuracy = o.target_accuracy;
  job.max_seconds = o.max_seconds;
  job.warm_start_steps = o.warm_start_steps;
  if (o.staleness_bound >= 0)
    job.staleness_bound = static_cast<std::uint64_t>(o.staleness_bound);
  job.policy.compress.method = optim::parse_codec(o.compress);
  job.policy.compress.bin_fc = o.bin_fc;
  job.policy.compress.bin_conv = o.bin_conv;
  job.policy.compress.density_fc = o.topk_fc;
  job.policy.compress.density_conv = o.topk_conv;
  job.policy.layers = init_model.ranges().ranges();
  job.policy.n_fetch = o.n_fetch;
  job.policy.n_push = o.n_push;
  job.policy.local_optimizer.name = "sgd";
  job.policy.local_lr
      = o.local_lr >= 0 ? o.local_lr : (o.n_fetch > 1 ? o.lr : 0.0);
  job.server.optimizer.name
      = o.server_optimizer.empty() ? o.optimizer : o.server_optimizer;
  job.server.optimizer.momentum = o.momentum;
  job.server.optimizer.weight_decay = o.weight_decay;
  job.server.lr = o.lr;
  optim::schedule_options sched;
  sched.name = o.schedule;
  sched.base_lr = o.lr;
  sched.gamma = o.lr_decay;
  sched.step_size = std::max<std::size_t>(in_updates(o.lr_step_epochs), 1);
  sched.total_steps = std::max<std::size_t>(in_updates(o.epochs), 1);
  sched.warmup_steps = in_updates(o.warmup_epochs);
  job.server.lr_schedule = sched;
  job.server.staleness_aware = o.staleness_aware;
  bool decentral = is_decentral_algo(o.algo);
  if (o.algo == "easgd" || o.algo == "lsgd" || decentral) {
    // The workers' own rate schedule, over their own steps.
    auto local = sched;
    double per_worker = static_cast<double>(per_epoch);
    auto in_steps = [&](double epochs) {
      return static_cast<std::size_t>(std::llround(epochs * per_worker));
    };
    local.step_size = std::max<std::size_t>(in_steps(o.lr_step_epochs), 1);
    local.total_steps = std::max<std::size_t>(steps_per_worker, 1);
    local.warmup_steps = in_steps(o.warmup_epochs);
    job.local_schedule = local;
    job.easgd.tau = o.tau;
    job.easgd.alpha = o.alpha;
    job.easgd.momentum = o.easgd_momentum;
    job.easgd.lr = o.lr;
    job.lsgd.tau = o.tau;
    job.lsgd.tau_g = o.tau_g;
    job.lsgd.lambda = o.lambda;
    job.lsgd.lambda_g = o.lambda_g;
    job.lsgd.score_window = o.score_window > 0 ? o.score_window : o.tau;
    job.lsgd.groups
        = static_cast<std::uint32_t>(std::max<std::uint64_t>(o.groups, 1));
    if (o.groups > 0)
      job.group_of = actors::lsgd_groups(workers, job.lsgd.groups, {});
    job.local_optimizer.name = o.optimizer;
    job.local_optimizer.momentum = o.momentum;
    job.local_optimizer.weight_decay = o.weight_decay;
    job.local_lr = o.lr;
    if (o.algo == "lsgd")
      job.shards = 0;
  }
  if (decentral) {
    job.peer.peers = static_cast<std::uint32_t>(o.peers);
    job.peer.overlap = o.overlap;
    job.peer.group_size = static_cast<std::uint32_t>(o.group_size);
    job.peer.seed = o.seed;
    job.peer.compress = job.policy.compress;
    job.peer.layers = job.policy.layers;
    job.peer.gamma = o.gossip_gamma;
    job.shadow.mode = o.shadow;
    job.shadow.alpha = o.alpha;
    job.shadow.block_momentum = o.block_momentum;
    job.shadow.block_lr = o.block_lr;
    job.shadow.period = std::chrono::milliseconds{
        static_cast<std::int64_t>(std::llround(o.shadow_period * 1000))};
    // ShadowSync: one syncer per node (this process is one node), or
    // --groups syncers over contiguous blocks of workers. (One per worker
    // makes model averaging an all-to-all among n syncers every round: on
    // mlp with 8 workers it sent as many bytes per sample as sync.)
    job.lsgd.groups
        = static_cast<std::uint32_t>(std::max<std::uint64_t>(o.groups, 1));
    job.group_of.clear();
    if (o.groups > 0)
      job.group_of = actors::lsgd_groups(workers, job.lsgd.groups, {});
    if (o.algo != "shadow" || o.shadow != "easgd")
      job.shards = 0;
  }
  job.request_timeout = caf::duration{std::chrono::microseconds{
      static_cast<std::int64_t>(o.request_timeout * 1e6)}};
  if (!sync) {
    // A lost worker's examples are split among the survivors.
    auto shared_parts
        = std::make_shared<const std::vector<std::vector<std::size_t>>>(parts);
    job.adopt_data = [shared_parts](optim::replica& r, messages::worker_id lost,
                                    std::uint32_t k, std::uint32_t m) {
      const auto& p = shared_parts->at(lost);
      auto first = p.size() * k / m, last = p.size() * (k + 1) / m;
      return r.add_examples({p.begin() + static_cast<std::ptrdiff_t>(first),
                             p.begin() + static_cast<std::ptrdiff_t>(last)});
    };
  }
  cluster_job out;
  out.fingerprint = fingerprint(*init, *data);
  out.steps_per_epoch = static_cast<double>(batches(n));
  auto servers = job.shards == 0
                     ? (o.groups > 0 ? std::to_string(o.groups) + " groups"
                                     : std::string{"no shards"})
                     : std::to_string(o.shards) + " shards";
  out.description = "troupe train: " + o.algo + " with "
                    + std::to_string(workers) + " workers and " + servers + ", "
                    + o.model + " on " + train->name + " (" + std::to_string(n)
                    + " examples, " + std::to_string(init->size())
                    + " parameters), " + std::to_string(steps_per_worker)
                    + " steps of batch " + std::to_string(o.batch)
                    + " per worker, seed " + std::to_string(o.seed);
  // A worker that fetches every step yields its scheduler thread every step
  // (while it waits), so the shared scheduler is fastest and a stop still
  // reaches it within a step; one that computes several steps in a row gets
  // a thread of its own instead.
  // (LSGD's and EASGD's workers hand their thread on between steps:
  // worker_config::yield_steps.)
  job.detached_workers = o.n_fetch > 1;
  out.job = std::move(job);
  return out;
}

nlohmann::json run_placed(const train_options& o, actors::job_config job,
                          const std::string& fingerprint, progress& bar,
                          actors::runtime_options rt) {
  nlohmann::json result;
  if (o.listen.empty()) {
    result = actors::run_job(std::move(job), rt);
  } else {
    net::cluster_options co;
    co.listen = net::parse_endpoint(o.listen, "--listen");
    co.expect = static_cast<std::uint32_t>(o.expect);
    co.join_timeout = o.link.join_timeout;
    co.link = link_settings(o.link, "troupe train");
    co.on_listening = o.on_listening;
    co.guard = o.port_guard;
    bar.message("troupe train: waiting for " + std::to_string(o.expect)
                + " node(s) to join at " + o.listen);
    result
        = net::run_distributed(std::move(job), to_spec(o), fingerprint, co, rt);
  }
  return result;
}

run_monitoring attach_monitoring(const train_options& o,
                                 actors::job_config& job, progress& bar) {
  // The monitoring endpoint lives as long as the job (monitor before server:
  // the server's routes use it).
  run_monitoring m;
  if (!o.monitor.empty() || !o.report.empty()) {
    m.monitor = std::make_shared<net::job_monitor>();
    m.monitor->set_algo(o.algo);
    if (o.algo == "lbfgs") { // a point per iteration, the objective as is
      m.monitor->set_step_interval(1);
      m.monitor->set_loss_smoothing(0);
    }
    job.observers.push_back(m.monitor);
    job.monitor = m.monitor->view();
    job.node_name = net::process_name();
  }
  if (!o.monitor.empty()) {
    net::http_options ho;
    ho.listen = net::parse_endpoint(o.monitor, "--monitor");
    ho.token = o.monitor_token;
    ho.public_paths = {"/"};
    m.endpoint = std::make_unique<net::http_server>(ho, m.monitor->routes());
    m.url = "http://" + ho.listen.host + ":"
            + std::to_string(m.endpoint->port()) + "/";
    bar.message("troupe train: monitoring at " + m.url
                + " (the dashboard; Prometheus at " + m.url + "metrics)");
  }
  return m;
}

void finish_monitoring(const train_options& o, run_monitoring& m,
                       nlohmann::json& result, progress& bar) {
  if (m.endpoint)
    result["monitor"] = m.url;
  if (!o.report.empty()) {
    // The result is printed even if the report cannot be written.
    try {
      write_report(o.report, m.monitor->series(), result);
      result["report"] = o.report;
      bar.message("troupe train: report written to " + o.report);
    } catch (const std::exception& e) {
      result["report_error"] = e.what();
      bar.message(std::string{"troupe train: "} + e.what());
    }
  }
}

nlohmann::json run_cluster(const train_options& o, optim::train_test loaded,
                           progress& bar) {
  auto prepared = prepare_cluster_job(o, std::move(loaded));
  auto& job = prepared.job;
  auto batch = o.batch;
  auto total_budget = static_cast<double>(job.steps_per_worker) * job.workers;
  auto steps_per_epoch = prepared.steps_per_epoch;
  job.on_progress = [&bar, total_budget, steps_per_epoch,
                     batch](const actors::job_progress& p, bool force) {
    progress_state s;
    s.step = p.steps;
    s.fraction = static_cast<double>(p.steps) / total_budget;
    s.epoch = static_cast<double>(p.steps) / steps_per_epoch;
    s.loss = p.loss;
    s.accuracy = p.accuracy;
    s.elapsed = p.seconds;
    s.samples_per_sec = p.seconds > 0 ? p.samples / p.seconds : 0;
    bar.update(s, force);
  };
  bar.message(prepared.description);
  actors::runtime_options rt;
  rt.threads = o.threads;
  auto watch = attach_monitoring(o, job, bar);
  auto result = run_placed(o, std::move(job), prepared.fingerprint, bar, rt);
  bar.message("troupe train: " + result["stop_reason"].get<std::string>());
  result["epochs"] = result["steps"].get<double>() / steps_per_epoch;
  finish_monitoring(o, watch, result, bar);
  return result;
}

actors::built_job build_from_spec(const std::string& spec) {
  auto o = from_spec(spec);
  if (!is_cluster_algo(o.algo))
    throw std::invalid_argument("--algo=" + o.algo + " does not run on nodes");
  validate_cluster(o);
  auto data = load_data(o.data, o.seed);
  if (o.standardize)
    optim::standardize(data);
  auto prepared = o.algo == "lbfgs" ? prepare_lbfgs_job(o, std::move(data))
                                    : prepare_cluster_job(o, std::move(data));
  return {std::move(prepared.job), std::move(prepared.fingerprint)};
}

} // namespace troupe::apps
