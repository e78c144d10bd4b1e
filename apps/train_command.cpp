#include "apps/train_command.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <iostream>
#include <map>

#include <caf/config_option_set.hpp>

#include "algos/registry.hpp"
#include "apps/byzantine.hpp"
#include "apps/cli.hpp"
#include "apps/cluster_train.hpp"
#include "apps/data_source.hpp"
#include "apps/driver_train.hpp"
#include "apps/durable.hpp"
#include "apps/job_flags.hpp"
#include "apps/progress.hpp"
#include "apps/run_report.hpp"
#include "apps/saved_model.hpp"
#include "apps/single_train.hpp"
#include "optim/dataset.hpp"
#include "optim/model_spec.hpp"
#include "optim/quote.hpp"

namespace troupe::apps {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

} // namespace

algos::algorithm& train_options::algorithm_ref() {
  select_algorithm(*this);
  return *algorithm;
}

const algos::algorithm& train_options::algorithm_ref() const {
  if (!algorithm || algorithm->name() != algo)
    throw std::logic_error("train_options: no algorithm selected for --algo="
                           + algo);
  return *algorithm;
}

void select_algorithm(train_options& o) {
  if (o.algorithm && o.algorithm->name() == o.algo)
    return;
  if (!algos::has_algorithm(o.algo)) {
    std::string names;
    for (const auto& e : algos::registered_algorithms())
      names += (names.empty() ? "" : ", ") + e.name;
    auto name = optim::quote(o.algo); // quoted only if it needs to be
    if (name == "'" + o.algo + "'")
      name = o.algo;
    throw usage_error("troupe train: unknown --algo=" + name
                      + " (this build offers: " + names + ")");
  }
  o.algorithm = algos::make_algorithm(o.algo);
}

namespace {

/// Which registered algorithms bind each flag (for refusals).
std::map<std::string, std::vector<std::string>> flag_owners() {
  std::map<std::string, std::vector<std::string>> owners;
  for (const auto& e : algos::registered_algorithms()) {
    caf::config_option_set set;
    auto scratch = e.make();
    scratch->bind(set);
    for (const auto& opt : set) {
      auto name = std::string{opt.long_name().data(), opt.long_name().size()};
      owners[name].push_back(e.name);
      owners[e.name + "." + name].push_back(e.name);
    }
  }
  return owners;
}

} // namespace

void add_train_options(option_parser& p, train_options& o,
                       const std::vector<std::string>& args) {
  if (auto algo = p.peek(args, "algo"))
    o.algo = *algo;
  select_algorithm(o);
  std::string algos_help;
  for (const auto& e : algos::registered_algorithms())
    algos_help += (algos_help.empty() ? "" : " | ") + e.name + " ("
                  + e.make()->summary() + ")";
  p.add(o.algo, "algo", algos_help);
  add_job_flags(p, o);
  p.add(o.progress, "progress",
        "auto (bar on a terminal, else lines) | bar | lines | none")
      .add(o.json, "json", "print one JSON object on the last stdout line")
      .add(o.listen, "listen",
           "HOST:PORT: run distributed, placing the roles on nodes that join "
           "here (troupe node --join=HOST:PORT); port 0 picks a free port")
      .add(o.expect, "expect", "with --listen: the number of nodes to wait for")
      .add(o.port_guard, "port-guard",
           "with --listen: check every incoming frame (with TLS, once the "
           "guard decrypted it) before CAF sees it (default true; false only "
           "to measure what it costs)")
      .add(o.monitor, "monitor",
           "HOST:PORT: serve /metrics (Prometheus) and /api/series while "
           "training (port 0: any free port; 127.0.0.1 keeps it local)")
      .add(o.monitor_token, "monitor-token",
           "with --monitor: require `Authorization: Bearer TOKEN`")
      .add(o.monitor_linger, "monitor-linger",
           "SECONDS or forever: with --monitor, the dashboard stays up "
           "this long after the job ends, showing the finished run (Ctrl-C "
           "ends it sooner)")
      .add(o.report, "report",
           "DIR: write train.csv, evaluations.csv, result.json, curves.svg "
           "and model.safetensors when the run ends")
      .add(o.save, "save",
           "FILE: write the final model there (safetensors; troupe eval and "
           "troupe predict read it)")
      .add(o.checkpoint_dir, "checkpoint-dir",
           "DIR: write the job's whole state there every --checkpoint-every "
           "and when it stops (troupe train --resume=DIR continues it)")
      .add(o.checkpoint_every, "checkpoint-every",
           "DURATION (30s, 5m, 1h) or a number of STEPS between checkpoints "
           "(default 60s)")
      .add(o.keep, "keep", "complete checkpoints kept (default 3)")
      .add(o.resume, "resume",
           "DIR: continue the job of DIR's latest complete checkpoint (its "
           "flags unless given again; flags that change the job are refused)");
  add_link_options(p, o.link);
  p.section("the job",
            {"config", "algo", "model", "data", "label-column", "workers",
             "shards", "shard-replicas", "seed", "threads"});
  p.section("training",
            {"batch", "lr", "optimizer", "momentum", "weight-decay", "schedule",
             "lr-decay", "lr-step-epochs", "warmup-epochs", "standardize",
             "train-examples", "init"});
  p.section("when to stop and evaluate", {"epochs", "max-steps", "max-seconds",
                                          "target-accuracy", "eval-every"});
  p.section("output", {"progress", "json", "report", "save", "monitor",
                       "monitor-token", "monitor-linger"});
  p.section("checkpoints",
            {"checkpoint-dir", "checkpoint-every", "keep", "resume"});
  p.section("Byzantine workers (to try a robust --aggregation)",
            {"byzantine", "attack", "attack-scale", "attack-sigma",
             "attack-batches", "worker-momentum"});
  p.section("across processes",
            {"listen", "expect", "token", "token-file", "tls-cert", "tls-key",
             "tls-ca", "heartbeat", "node-timeout", "join-timeout",
             "request-timeout", "port-guard", "shm"});
  o.algorithm->bind(p.options());
  p.group_titles[o.algo]
      = "options of --algo=" + o.algo + " (" + o.algorithm->summary() + ")";
  p.help_footer
      = "\nEach algorithm's own options: troupe train --algo=NAME --help\n";
  auto chosen = o.algo;
  p.explain_unknown = [chosen](const std::string& name) -> std::string {
    auto owners = flag_owners();
    auto it = owners.find(name);
    if (it == owners.end())
      return {};
    return "--" + name + " applies to " + algos::joined_names(it->second)
           + ", not to --algo=" + chosen;
  };
}

namespace {

void validate(train_options& o) {
  select_algorithm(o);
  auto& algo = *o.algorithm;
  validate_algorithm(o);
  auto positive = [](double x, const char* name) {
    if (!(x > 0) || !std::isfinite(x))
      throw usage_error(std::string{"troupe train: --"} + name
                        + " must be a positive number");
  };
  auto non_negative = [](double x, const char* name) {
    if (!(x >= 0) || !std::isfinite(x))
      throw usage_error(std::string{"troupe train: --"} + name
                        + " must be zero or positive");
  };
  if (o.batch == 0)
    throw usage_error("troupe train: --batch must be at least 1");
  check_model_flags(o);
  bool actors = algo.run_by() != algos::runner::single_loop;
  auto needs_actors = [&](const char* flag, const char* what) {
    throw usage_error(std::string{"troupe train: --"} + flag + " " + what
                      + " the actor algorithms, not --algo=" + o.algo
                      + " (one worker without actors)");
  };
  check_byzantine(o);
  auto plan = checkpoint_flags(o);
  if (plan.enabled() && actors && !algo.checkpointable())
    throw usage_error("troupe train: --checkpoint-dir: --algo=" + o.algo
                      + " cannot be checkpointed: "
                      + algo.checkpoint_refusal());
  if (!o.report.empty())
    check_report_dir(o.report);
  if (!o.monitor.empty()) {
    try {
      net::parse_endpoint(o.monitor, "--monitor");
    } catch (const std::invalid_argument& e) {
      throw usage_error(std::string{"troupe train: "} + e.what());
    }
  }
  o.linger_seconds = linger_seconds(o.monitor_linger);
  if (o.linger_seconds > 0 && o.monitor.empty())
    throw usage_error("troupe train: --monitor-linger keeps the dashboard of "
                      "--monitor=HOST:PORT up; give --monitor too");
  if (!o.listen.empty()) {
    if (!actors)
      needs_actors("listen", "runs");
    if (o.expect == 0)
      throw usage_error("troupe train: --listen needs --expect=M, the number "
                        "of nodes to wait for");
    try {
      net::parse_endpoint(o.listen, "--listen");
    } catch (const std::invalid_argument& e) {
      throw usage_error(std::string{"troupe train: "} + e.what());
    }
    link_settings(o.link, "troupe train");
  } else if (o.expect > 0) {
    throw usage_error("troupe train: --expect needs --listen=HOST:PORT");
  }
  if (algo.run_by() == algos::runner::own_driver)
    return; // no rates, epochs or evaluations: its own checks covered it
  const auto& d = defaults_for(optim::model_label(o.model));
  if (o.weight_decay < 0 && o.weight_decay != -1)
    throw usage_error("troupe train: --weight-decay must be zero or positive");
  // Worker momentum is the job's momentum: the optimizer that applies the
  // workers' pushes (or, in gossip, their own steps) defaults to plain SGD
  // rather than a second momentum on top (which trained mlp to 0.52 where
  // either alone reaches 0.83), and the default rate to the model's over
  // 1 - beta, the step the default momentum optimizer takes.
  bool momentum_sgd = o.worker_momentum > 0 && o.optimizer.empty();
  bool lr_given = o.lr != 0;
  if (momentum_sgd)
    o.optimizer = "sgd";
  // The algorithm's defaults: its rate, optimizer and weight decay.
  algo.resolve(o, d.lr);
  if (o.lr == 0)
    o.lr = d.lr;
  if (momentum_sgd && !lr_given)
    o.lr /= 1 - o.worker_momentum;
  if (o.epochs == 0)
    o.epochs = d.epochs;
  if (o.lr_decay == 0)
    o.lr_decay = d.lr_decay;
  if (o.lr_step_epochs == 0)
    o.lr_step_epochs = d.lr_step_epochs;
  positive(o.lr, "lr");
  positive(o.epochs, "epochs");
  positive(o.lr_decay, "lr-decay");
  positive(o.lr_step_epochs, "lr-step-epochs");
  non_negative(o.max_seconds, "max-seconds");
  non_negative(o.warmup_epochs, "warmup-epochs");
  non_negative(o.eval_every, "eval-every");
  non_negative(o.weight_decay, "weight-decay");
  if (!(o.momentum >= 0 && o.momentum < 1))
    throw usage_error("troupe train: --momentum must be in [0, 1)");
  if (!(o.target_accuracy >= 0 && o.target_accuracy <= 1))
    throw usage_error("troupe train: --target-accuracy must be in [0, 1]");
  if (o.eval_every == 0)
    o.eval_every = o.target_accuracy > 0 ? 0.25 : 1.0;
}

} // namespace

namespace {

/// --model=FILE.json: its checked description is the model from here on
/// (the nodes, checkpoints and saved models carry the text, not the path).
void read_model_file(train_options& o) {
  if (!optim::names_model_file(o.model))
    return;
  try {
    o.model = optim::read_model_description(o.model);
  } catch (const optim::data_error& e) {
    throw usage_error(std::string{"troupe train: --model="} + e.what());
  }
}

} // namespace

void check_train_flags(train_options o) {
  read_model_file(o);
  validate(o);
}

nlohmann::json run_train(train_options o) {
  read_model_file(o);
  apply_resume(o);
  validate(o);
  auto style = parse_progress_style(o.progress);
  auto t_load = clock_type::now();
  auto data = load_job_data(o);
  auto input_scaling = data.scaling;
  auto load_seconds = seconds_since(t_load);
  auto name = data.sets.train.name;
  progress bar{style, o.algo + "/" + optim::model_label(o.model),
               o.target_accuracy};
  if (!data.note.empty())
    bar.message(data.note);
  auto runner = o.algorithm->run_by();
  final_model out{o, data.sets.train, input_scaling};
  o.on_final_params
      = [&out](const float* p, std::size_t n) { out.params.assign(p, p + n); };
  // The run's options in its result, also in its report's result.json
  // (finish_monitoring calls it before writing).
  o.complete_result = [&o, name, load_seconds, input_scaling,
                       runner](nlohmann::json& result) {
    result["algo"] = o.algo;
    result["model"] = optim::model_label(o.model);
    if (optim::is_model_description(o.model))
      result["model_description"] = nlohmann::json::parse(o.model);
    result["data"] = name;
    result["workers"] = o.workers;
    // The job's own count where it ran one: a pipeline's layout or
    // --max-params-per-actor may use more shards than --shards.
    if (!result.contains("shards"))
      result["shards"] = o.algorithm->uses_shards(o) ? o.shards : 0;
    result["batch"] = o.batch;
    // An algorithm that ignores --lr finds its own step (a line search).
    auto own_step = runner == algos::runner::own_driver;
    result["lr"] = own_step ? nlohmann::json(nullptr) : nlohmann::json(o.lr);
    result["optimizer"] = own_step ? o.algo : o.optimizer;
    result["seed"] = o.seed;
    if (o.worker_momentum > 0)
      result["worker_momentum"] = o.worker_momentum;
    if (o.byzantine > 0)
      result["byzantine"] = byzantine_report(o);
    result["target_accuracy"] = o.target_accuracy > 0
                                    ? nlohmann::json(o.target_accuracy)
                                    : nlohmann::json(nullptr);
    result["data_load_seconds"] = load_seconds;
    if (!o.label_column.empty())
      result["label_column"] = o.label_column;
    result["input_scaling"]
        = input_scaling.per_feature()
              ? nlohmann::json{{"mean", input_scaling.means},
                               {"stddev", input_scaling.stddevs}}
              : nlohmann::json{{"mean", input_scaling.mean},
                               {"stddev", input_scaling.stddev}};
  };
  auto result = runner == algos::runner::own_driver
                    ? run_driver_train(o, std::move(data.sets), bar)
                : runner == algos::runner::coordinator
                    ? run_cluster(o, std::move(data), bar)
                    : run_single(o, data.sets, bar);
  o.complete_result(result);
  out.save(result, bar);
  return result;
}

} // namespace troupe::apps
