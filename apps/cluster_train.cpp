#include "apps/cluster_train.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "actors/job.hpp"
#include "apps/byzantine.hpp"
#include "apps/cli.hpp"
#include "apps/data_source.hpp"
#include "apps/driver_train.hpp"
#include "apps/durable.hpp"
#include "apps/job_data.hpp"
#include "apps/run_report.hpp"
#include "apps/saved_model.hpp"
#include "net/cluster.hpp"
#include "net/monitor.hpp"
#include "optim/optimizer.hpp"
#include "optim/param_hash.hpp"
#include "optim/replica.hpp"
#include "optim/trainer.hpp"

namespace troupe::apps {

namespace {

/// The initial parameters' part of a fingerprint.
std::string params_print(const std::vector<float>& init) {
  return "params " + std::to_string(init.size()) + " "
         + optim::hash_params(init.data(), init.size());
}

} // namespace

std::string fingerprint(const std::vector<float>& init,
                        const optim::train_test& data) {
  const auto& x = data.train.x;
  return params_print(init) + ", train " + std::to_string(data.train.size())
         + " "
         + optim::hash_params(x.data(), static_cast<std::size_t>(x.size()))
         + ", test " + std::to_string(data.test.size());
}

optim::sequential<float> initial_model(const train_options& o,
                                       const optim::dataset& train) {
  auto model
      = optim::make_model<float>(o.model, train.sample_shape, train.classes);
  model.init(o.seed);
  apply_init(o, train, model);
  if (o.shards > model.size())
    throw usage_error("troupe train: --shards=" + std::to_string(o.shards)
                      + " exceeds the model's " + std::to_string(model.size())
                      + " parameters");
  return model;
}

std::shared_ptr<const algos::algorithm> build_algorithm(const train_options& o,
                                                        algos::job_build& b) {
  auto algo = o.algorithm->clone();
  try {
    algo->build(b);
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string{"troupe train: "} + e.what());
  }
  b.job.algorithm = algo;
  return algo;
}

/// --shard-replicas: a hot backup per shard of an asynchronous parameter
/// server; the workers keep their recent pushes to send them again to a
/// backup that took over.
void set_replicas(const train_options& o, const actors::algorithm_ptr& algo,
                  actors::job_config& job) {
  if (o.shard_replicas > 1)
    throw usage_error("troupe train: --shard-replicas="
                      + std::to_string(o.shard_replicas)
                      + ": 0 or 1 (one hot backup per shard)");
  if (o.shard_replicas == 0)
    return;
  if (!algo->replicates_shards(job)) {
    std::string why = "troupe train: --shard-replicas=1: --algo=" + algo->name()
                      + " keeps no hot backups of its shards ("
                      + algo->replica_refusal(job) + ")";
    if (algo->restores_shards(job))
      why += "; with --checkpoint-dir, a shard lost with its node comes "
             "back from the latest checkpoint";
    throw usage_error(why);
  }
  job.shard_replicas = 1;
  job.policy.replay = 64;
}

std::size_t examples_of(const train_options& o, const optim::dataset& train) {
  return o.train_examples > 0
             ? std::min<std::size_t>(train.size(), o.train_examples)
             : train.size();
}

cluster_job prepare_cluster_job(const train_options& o,
                                optim::train_test loaded) {
  job_data d;
  d.sets = std::move(loaded);
  return prepare_cluster_job(o, std::move(d));
}

cluster_job prepare_cluster_job(const train_options& o, job_data loaded) {
  // A sharded data directory: the first examples (calibration), the test
  // set loaded by the evaluator.
  auto test = take_test_set(loaded);
  auto dir = loaded.dir;
  auto data = std::make_shared<const optim::train_test>(std::move(loaded.sets));
  auto train = std::shared_ptr<const optim::dataset>(data, &data->train);
  std::size_t n = dir ? dir->train_examples() : examples_of(o, *train);
  if (n < o.workers)
    throw usage_error("troupe train: " + std::to_string(o.workers)
                      + " workers need at least as many training examples");
  auto init_model = initial_model(o, *train);
  auto init = std::make_shared<const std::vector<float>>(
      init_model.params(), init_model.params() + init_model.size());

  const auto& algo = o.algorithm_ref();
  bool stream = algo.layout() == algos::data_layout::shared_stream;
  auto workers = static_cast<std::uint32_t>(o.workers);
  std::vector<std::vector<std::size_t>> parts;
  std::vector<std::size_t> all(stream ? n : 0);
  std::iota(all.begin(), all.end(), std::size_t{0});
  if (!stream && !dir) {
    parts = optim::shard_indices(*train, workers, optim::shard_mode::iid,
                                 o.seed, n);
  }
  // Every worker's step budget: epochs over its own part (a shared stream:
  // over the stream of global batches).
  auto batches = [&](std::size_t examples) {
    return (examples + o.batch - 1) / o.batch;
  };
  std::size_t per_epoch
      = stream ? optim::batch_iterator{all, o.batch, o.seed,
                                       optim::batch_part{0, workers}}
                     .batches_per_epoch()
        : dir ? batches((n + workers - 1) / workers)
              : batches(parts[0].size());
  auto steps_per_worker = std::max<std::uint64_t>(
      static_cast<std::uint64_t>(std::llround(o.epochs * per_epoch)), 1);
  if (o.max_steps > 0)
    steps_per_worker = std::min<std::uint64_t>(steps_per_worker, o.max_steps);

  actors::job_config job;
  job.workers = workers;
  job.shards = static_cast<std::uint32_t>(o.shards);
  job.init = init;
  job.steps_per_worker = steps_per_worker;
  auto model_name = o.model;
  auto batch = o.batch;
  auto seed = o.seed;
  // Held once: every node's agent keeps a copy of the job and its
  // functions (10^4 simulated nodes, issue [17]).
  auto shared_parts
      = std::make_shared<const std::vector<std::vector<std::size_t>>>(parts);
  auto shared_all = std::make_shared<const std::vector<std::size_t>>(all);
  auto source = [=](messages::worker_id w) {
    if (stream)
      return optim::batch_source{train, *shared_all, batch, seed,
                                 optim::batch_part{w, workers}};
    return optim::batch_source{train, (*shared_parts)[w], batch,
                               seed + 7919 * (w + 1), optim::batch_part{}};
  };
  if (!dir) // (a data directory's files are read by the workers' replicas)
    job.batches = source;
  job.make_replica = [=](messages::worker_id w) {
    return optim::make_model_replica(model_name, source(w), seed);
  };
  auto eval_model = std::make_shared<optim::sequential<float>>(
      optim::make_model<float>(o.model, train->sample_shape, train->classes));
  job.evaluate
      = [eval_model, data, test, batch](const float* p, std::size_t size) {
          std::copy(p, p + size, eval_model->params());
          optim::calibrate(*eval_model, data->train,
                           optim::calibration_examples, batch);
          return optim::evaluate(*eval_model, test(), batch);
        };
  job.eval_every_steps = std::max<std::uint64_t>(
      static_cast<std::uint64_t>(
          std::llround(o.eval_every * static_cast<double>(batches(n)))),
      1);
  job.target_accuracy = o.target_accuracy;
  job.max_seconds = o.max_seconds;
  // The shards' optimizer and schedule, in server updates (one per global
  // batch on a shared stream); an algorithm may change them.
  job.server.optimizer.name = o.optimizer;
  job.server.optimizer.momentum = o.momentum;
  job.server.optimizer.weight_decay = o.weight_decay;
  job.server.lr = o.lr;
  job.request_timeout = caf::duration{std::chrono::microseconds{
      static_cast<std::int64_t>(o.request_timeout * 1e6)}};
  algos::job_build build{o, job};
  build.train = train;
  build.examples = n;
  build.batches_per_epoch = per_epoch;
  build.batches = batches(n);
  build.steps_per_worker = steps_per_worker;
  build.layers = init_model.ranges().ranges();
  job.server.lr_schedule = build.server_schedule(
      static_cast<double>(stream ? per_epoch : batches(n)));
  cluster_job out;
  out.algorithm = build_algorithm(o, build);
  // The shards' optimizer knows the model's layers (novograd: per layer;
  // each shard takes the parts in its range, optim::for_slice).
  job.server.optimizer.layers.clear();
  for (const auto& l : build.layers)
    job.server.optimizer.layers.push_back(l.size);
  set_replicas(o, job.algorithm, job);
  if (dir) {
    shard_by_files(o, loaded, job);
  } else if (!stream) {
    // A lost worker's examples are split among the survivors.
    job.adopt_data = [shared_parts](optim::replica& r, messages::worker_id lost,
                                    std::uint32_t k, std::uint32_t m) {
      // A worker of a node that joined the running job has no part of its
      // own (its examples were ceded; not handed over again).
      if (lost >= shared_parts->size())
        return std::size_t{0};
      const auto& p = shared_parts->at(lost);
      auto first = p.size() * k / m, last = p.size() * (k + 1) / m;
      return r.add_examples({p.begin() + static_cast<std::ptrdiff_t>(first),
                             p.begin() + static_cast<std::ptrdiff_t>(last)});
    };
  }
  if (!stream && !dir)
    // A node joining the running job: its workers train on the examples the
    // live workers ceded (actors/coordinator_join.cpp).
    job.make_joined_replica = [=](messages::worker_id w,
                                  const std::vector<std::uint64_t>& examples) {
      return optim::make_model_replica(model_name, train,
                                       {examples.begin(), examples.end()},
                                       batch, seed + 7919 * (w + 1), seed);
    };
  // Byzantine workers' scout: every attacker draws the same batches of the
  // training set in memory (with a data directory: its first examples).
  add_byzantine(
      o, job,
      [=] {
        std::vector<std::size_t> every(train->size());
        std::iota(every.begin(), every.end(), std::size_t{0});
        return optim::make_model_replica(model_name, train, std::move(every),
                                         batch, seed + 104729, seed);
      },
      train->classes);
  out.fingerprint
      = dir ? params_print(*init) + ", " + optim::data_dir_fingerprint(*dir)
            : fingerprint(*init, *data);
  out.steps_per_epoch = static_cast<double>(batches(n));
  out.steps_per_worker = steps_per_worker;
  out.examples = n;
  out.model = o.model;
  out.input = train->sample_shape;
  out.classes = train->classes;
  out.description = o.program + ": " + out.algorithm->describe(build);
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
    result
        = net::run_distributed(std::move(job), to_spec(o), fingerprint, co, rt);
  }
  return result;
}

nlohmann::json run_cluster(const train_options& o, job_data loaded,
                           progress& bar) {
  auto prepared = prepare_cluster_job(o, std::move(loaded));
  auto& job = prepared.job;
  auto total_budget = static_cast<double>(job.steps_per_worker) * job.workers;
  auto steps_per_epoch = prepared.steps_per_epoch;
  job.on_progress = [&bar, total_budget, steps_per_epoch](
                        const actors::job_progress& p, bool force) {
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
  job.stop = o.stop;
  attach_checkpoints(o, job);
  if (job.resume)
    bar.message("troupe train: resumed from " + job.resume->path + " at step "
                + std::to_string(job.resume->progress.value("total_steps",
                                                            std::uint64_t{0})));
  auto final_params = std::make_shared<std::vector<float>>();
  job.final_params = final_params;
  auto result = o.run_placed_job ? o.run_placed_job(std::move(job), prepared)
                                 : run_placed(o, std::move(job),
                                              prepared.fingerprint, bar, rt);
  if (o.on_final_params && !final_params->empty())
    o.on_final_params(final_params->data(), final_params->size());
  // Every step taken counts, a lost worker's too: "steps" sums the reports
  // of the workers there at the end, the ledger's steps_done all of them.
  auto steps = result["steps"].get<double>();
  if (result.contains("steps_done") && result["steps_done"].is_number())
    steps = std::max(steps, result["steps_done"].get<double>());
  result["epochs"] = steps / steps_per_epoch;
  finish_monitoring(o, watch, result, bar);
  return result;
}

actors::built_job build_from_spec(const std::string& spec) {
  auto o = from_spec(spec);
  auto runner = o.algorithm_ref().run_by();
  if (runner == algos::runner::single_loop)
    throw std::invalid_argument("--algo=" + o.algo + " does not run on nodes");
  validate_algorithm(o);
  auto data = load_job_data(o);
  auto prepared = runner == algos::runner::own_driver
                      ? prepare_driver_job(o, std::move(data.sets))
                      : prepare_cluster_job(o, std::move(data));
  return {std::move(prepared.job), std::move(prepared.fingerprint)};
}

} // namespace troupe::apps
