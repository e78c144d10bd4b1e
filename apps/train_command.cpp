#include "apps/train_command.hpp"

#include <chrono>
#include <cmath>
#include <iostream>

#include "apps/cli.hpp"
#include "apps/cluster_train.hpp"
#include "apps/data_source.hpp"
#include "apps/lbfgs_train.hpp"
#include "apps/progress.hpp"
#include "apps/run_report.hpp"
#include "apps/single_train.hpp"
#include "optim/dataset.hpp"

namespace troupe::apps {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Per-model defaults, tuned on Fashion-MNIST (see docs/benchmarks.md); the
/// one place they are written, --help included.
struct model_defaults {
  const char* model;
  double lr;
  double epochs;
  double lr_decay;
  double lr_step_epochs;
};

/// Downpour's default server rate (plain SGD) relative to the model's rate.
constexpr double downpour_lr_factor = 4;

constexpr model_defaults model_table[] = {
    {"mlp", 0.05, 10, 0.5, 2},
    {"lenet", 0.03, 12, 0.5, 3},
    {"logreg", 0.02, 5, 0.5, 2},
};

const model_defaults& defaults_for(const std::string& model) {
  for (const auto& d : model_table)
    if (model == d.model)
      return d;
  return model_table[0]; // an unknown model is refused by make_model
}

/// "default 0.5" if every model agrees, else "default: mlp 2, lenet 3, ...".
std::string per_model(double model_defaults::*field) {
  auto fmt = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", x);
    return std::string{buf};
  };
  bool same = true;
  for (const auto& d : model_table)
    same = same && d.*field == model_table[0].*field;
  if (same)
    return "default " + fmt(model_table[0].*field);
  std::string out = "default:";
  for (const auto& d : model_table)
    out += std::string{&d == model_table ? " " : ", "} + d.model + " "
           + fmt(d.*field);
  return out;
}

} // namespace

void add_train_options(option_parser& p, train_options& o) {
  p.add(o.algo, "algo",
        "sgd (default: one worker, no actors) | downpour (asynchronous "
        "parameter server) | sync (synchronous all-reduce over the shards) | "
        "easgd (elastic averaging with a center on the shards) | lsgd "
        "(multi-leader: pulls toward the best workers, no shards) | sgp "
        "(push-sum gossip between the workers) | dssync (averaging in "
        "shuffled groups) | shadow (background synchronization while the "
        "workers never wait)")
      .add(o.model, "model", "logreg | mlp | lenet (default mlp)")
      .add(o.data, "data",
           "fashion-mnist (default) | DIR of IDX files | libsvm FILE | "
           "synthetic-logreg")
      .add(o.standardize, "standardize",
           "standardize inputs with the training set's mean and stddev")
      .add(o.workers, "workers", "number of workers (sgd: 1)")
      .add(o.shards, "shards", "parameter-server shards (sgd: 1)")
      .add(o.batch, "batch", "minibatch size per worker (default 64)")
      .add(o.lr, "lr", "learning rate (" + per_model(&model_defaults::lr) + ")")
      .add(o.seed, "seed", "random seed (default 1; same seed, same run)")
      .add(o.epochs, "epochs",
           "epochs (" + per_model(&model_defaults::epochs) + ")")
      .add(o.max_seconds, "max-seconds",
           "stop after this many seconds (default: no limit)")
      .add(o.target_accuracy, "target-accuracy",
           "stop once test accuracy reaches this")
      .add(o.max_steps, "max-steps",
           "stop after this many optimizer steps (lbfgs: iterations, "
           "default 100)")
      .add(o.train_examples, "train-examples",
           "train on the first N examples only (0: all)")
      .add(o.optimizer, "optimizer",
           "sgd | momentum (default) | nesterov (lsgd's default, the "
           "paper's) | adagrad | adam")
      .add(o.momentum, "momentum", "momentum factor (default 0.9)")
      .add(o.weight_decay, "weight-decay",
           "L2 penalty (default 0; lsgd: 1e-4, the paper's; sgp, dssync, "
           "shadow and lbfgs: 1e-4)")
      .add(o.schedule, "schedule", "constant | step (default) | cosine")
      .add(o.lr_decay, "lr-decay",
           "step schedule: factor per period ("
               + per_model(&model_defaults::lr_decay) + ")")
      .add(o.lr_step_epochs, "lr-step-epochs",
           "step schedule: period in epochs ("
               + per_model(&model_defaults::lr_step_epochs) + ")")
      .add(o.warmup_epochs, "warmup-epochs", "linear warm-up (epochs)")
      .add(o.eval_every, "eval-every",
           "epochs between test evaluations (default 0.25 with a target, else "
           "1)")
      .add(o.progress, "progress",
           "auto (bar on a terminal, else lines) | bar | lines | none")
      .add(o.json, "json", "print one JSON object on the last stdout line")
      .add(o.n_fetch, "n-fetch", "downpour: fetch parameters every N steps")
      .add(o.n_push, "n-push",
           "downpour: push the summed gradient every N steps (lower --lr "
           "about N-fold)")
      .add(o.staleness_bound, "staleness-bound",
           "downpour: SSP bound s; a worker waits while it is more than s "
           "steps ahead of the slowest (-1: none)")
      .add(o.staleness_aware, "staleness-aware",
           "downpour: divide each push's server rate by its staleness")
      .add(o.warm_start_steps, "warm-start-steps",
           "downpour: worker 0 trains alone for N steps first")
      .add(o.server_optimizer, "server-optimizer",
           "optimizer on the shards: sgd | momentum | nesterov | adagrad | "
           "adam (sync: --optimizer; downpour: sgd, with --lr 4x the "
           "model's default)")
      .add(o.local_lr, "local-lr",
           "downpour: replica rate between fetches (default: 0 with "
           "--n-fetch=1, else --lr)")
      .add(o.tau, "tau",
           "easgd: steps between exchanges with the center; lsgd: steps per "
           "worker between local rounds (default 4)")
      .add(o.alpha, "alpha", "easgd: moving rate alpha (default 0.9 / workers)")
      .add(o.easgd_momentum, "easgd-momentum",
           "easgd: EAMSGD's Nesterov momentum delta (default 0; the paper "
           "0.99 with a smaller --lr)")
      .add(o.groups, "groups",
           "lsgd: groups of workers with a leader each; shadow: syncers, "
           "each over a block of workers (default: one per node in a "
           "distributed job, else 1)")
      .add(o.lambda, "lambda",
           "lsgd: pull toward the group's leader, in [0, 1] (default 0.1)")
      .add(o.lambda_g, "lambda-g",
           "lsgd: pull toward the global leader, in [0, 1] (default 0.1)")
      .add(o.tau_g, "tau-g",
           "lsgd: steps per worker between global rounds (default 16)")
      .add(o.score_window, "score-window",
           "lsgd: recent losses averaged into the leader score (default: "
           "--tau)")
      .add(o.peers, "peers",
           "sgp: out-peers per step on the exponential graph, 1 or 2 "
           "(default 1)")
      .add(o.overlap, "overlap",
           "sgp: overlap SGP; a step waits only for in-peer shares more "
           "than N steps old (default 0: every step's)")
      .add(o.group_size, "group-size",
           "dssync: workers per averaging group (default 2)")
      .add(o.shadow, "shadow",
           "shadow: the background synchronization, easgd | ma | bmuf "
           "(default ma)")
      .add(o.shadow_period, "shadow-period",
           "shadow: seconds between two synchronization rounds (default 0: "
           "back to back)")
      .add(o.block_momentum, "block-momentum",
           "shadow --shadow=bmuf: block momentum (default 1 - 1 / workers)")
      .add(o.block_lr, "block-lr",
           "shadow --shadow=bmuf: block learning rate (default 1)")
      .add(o.compress, "compress",
           "downpour, sync: compress the gradient pushes with error "
           "feedback; sgp: the shares: adacomp | topk | onebit | none "
           "(default none)")
      .add(o.bin_fc, "bin-fc",
           "adacomp: bin length of fully connected layers (default 500)")
      .add(o.bin_conv, "bin-conv",
           "adacomp: bin length of convolutional layers (default 50)")
      .add(o.topk_fc, "topk-fc",
           "topk: fraction of a fully connected layer sent (default 0.01)")
      .add(o.topk_conv, "topk-conv",
           "topk: fraction of a convolutional layer sent (default 0.01)")
      .add(o.gossip_gamma, "gossip-gamma",
           "sgp with --compress: consensus step in (0, 1]; each step moves "
           "gamma / (peers + 1) of the model's public copy (default 0.5; "
           "topk: 0.2)")
      .add(o.threads, "threads", "actor scheduler threads (0: one per core)")
      .add(o.request_timeout, "request-timeout",
           "seconds before an unanswered request fails the job (default 60)")
      .add(o.listen, "listen",
           "HOST:PORT: run distributed, placing the roles on nodes that join "
           "here (troupe node --join=HOST:PORT); port 0 picks a free port")
      .add(o.expect, "expect", "with --listen: the number of nodes to wait for")
      .add(o.port_guard, "port-guard",
           "with --listen and no TLS: check every incoming frame before CAF "
           "sees it (default true; false only to measure what it costs)");
  p.add(o.monitor, "monitor",
        "HOST:PORT: serve /metrics (Prometheus) and /api/series while "
        "training (port 0: any free port; 127.0.0.1 keeps it local)")
      .add(o.monitor_token, "monitor-token",
           "with --monitor: require `Authorization: Bearer TOKEN`")
      .add(o.report, "report",
           "DIR: write train.csv, evaluations.csv, result.json and curves.svg "
           "when the run ends");
  add_link_options(p, o.link);
  add_lbfgs_options(p, o);
}

namespace {

void validate(train_options& o) {
  if (o.algo != "sgd" && !is_cluster_algo(o.algo))
    throw usage_error("troupe train: unknown --algo=" + o.algo
                      + " (this build offers: sgd, downpour, sync, easgd, "
                        "lsgd, sgp, dssync, shadow, lbfgs)");
  if (is_cluster_algo(o.algo))
    validate_cluster(o);
  else if (o.workers != 1 || o.shards != 1)
    throw usage_error("troupe train: --algo=sgd trains one worker without "
                      "parameter shards; got --workers="
                      + std::to_string(o.workers)
                      + " --shards=" + std::to_string(o.shards));
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
  if (!o.report.empty()) {
    if (!is_cluster_algo(o.algo))
      throw usage_error("troupe train: --report records the actor algorithms "
                        "(downpour, sync, easgd, lsgd), not --algo="
                        + o.algo);
    check_report_dir(o.report);
  }
  if (!o.monitor.empty()) {
    if (!is_cluster_algo(o.algo))
      throw usage_error("troupe train: --monitor watches the actor algorithms "
                        "(downpour, sync, easgd, lsgd), not --algo="
                        + o.algo);
    try {
      net::parse_endpoint(o.monitor, "--monitor");
    } catch (const std::invalid_argument& e) {
      throw usage_error(std::string{"troupe train: "} + e.what());
    }
  }
  if (!o.listen.empty()) {
    if (!is_cluster_algo(o.algo))
      throw usage_error("troupe train: --listen runs the actor algorithms "
                        "(downpour, sync, easgd, lsgd), not --algo="
                        + o.algo);
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
  if (o.algo == "lbfgs")
    return; // no rates, epochs or evaluations: validate_lbfgs checked it
  const auto& d = defaults_for(o.model);
  if (o.algo == "downpour" && o.server_optimizer.empty()) {
    // Asynchrony acts like extra momentum (staleness ~ workers - 1), so the
    // shards default to plain SGD at a larger rate: on mlp with 2 workers
    // 1.8 s to 0.88 against 2.2 s with momentum 0.9 (docs/benchmarks.md).
    o.server_optimizer = "sgd";
    if (o.lr == 0)
      o.lr = downpour_lr_factor * d.lr;
  }
  if (o.algo == "easgd" && o.lr == 0 && o.easgd_momentum == 0)
    o.lr = downpour_lr_factor * d.lr; // plain SGD steps, as downpour's
  // LSGD's workers default to the authors' local optimizer: Nesterov
  // momentum 0.9 with weight decay 1e-4 (on lenet with 2 groups of 2 it
  // reached 0.90, plain momentum without decay stopped at 0.898).
  // SGP's job scripts use the same (Nesterov 0.9, weight decay 1e-4); the
  // other decentralized algorithms follow.
  bool decentralized = o.algo == "lsgd" || is_decentral_algo(o.algo);
  if (o.optimizer.empty())
    o.optimizer = decentralized ? "nesterov" : "momentum";
  if (o.weight_decay < 0 && o.weight_decay != -1)
    throw usage_error("troupe train: --weight-decay must be zero or positive");
  if (o.weight_decay == -1)
    o.weight_decay = decentralized ? 1e-4 : 0;
  if (o.lr == 0)
    o.lr = d.lr;
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

nlohmann::json run_train(train_options o) {
  validate(o);
  auto style = parse_progress_style(o.progress);
  auto t_load = clock_type::now();
  auto data = load_data(o.data, o.seed);
  optim::scaling input_scaling;
  if (o.standardize)
    input_scaling = optim::standardize(data);
  auto load_seconds = seconds_since(t_load);
  auto name = data.train.name;
  progress bar{style, o.algo + "/" + o.model};
  auto result = o.algo == "lbfgs" ? run_lbfgs_train(o, std::move(data), bar)
                : is_cluster_algo(o.algo) ? run_cluster(o, std::move(data), bar)
                                          : run_single(o, data, bar);
  result["algo"] = o.algo;
  result["model"] = o.model;
  result["data"] = name;
  result["workers"] = o.workers;
  result["shards"] = o.algo == "lsgd" || o.algo == "sgp" || o.algo == "dssync"
                             || (o.algo == "shadow" && o.shadow != "easgd")
                         ? 0
                         : o.shards;
  result["batch"] = o.batch;
  result["lr"] = o.algo == "lbfgs" ? nlohmann::json(nullptr)
                                   : nlohmann::json(o.lr); // line search
  result["optimizer"] = o.algo == "lbfgs" ? "lbfgs" : o.optimizer;
  result["seed"] = o.seed;
  result["target_accuracy"] = o.target_accuracy > 0
                                  ? nlohmann::json(o.target_accuracy)
                                  : nlohmann::json(nullptr);
  result["data_load_seconds"] = load_seconds;
  result["input_scaling"]
      = {{"mean", input_scaling.mean}, {"stddev", input_scaling.stddev}};
  return result;
}

int train_main(const std::vector<std::string>& args) {
  train_options opts;
  option_parser parser{"troupe train"};
  add_train_options(parser, opts);
  try {
    if (!parser.parse(args))
      return 0;
  } catch (const usage_error& e) {
    std::cerr << e.what() << '\n';
    return 2;
  }
  return train_main_with(std::move(opts));
}

int train_main_with(train_options opts) {
  return guarded_main("troupe train", [&] {
    auto json = opts.json;
    auto result = run_train(std::move(opts));
    const auto& acc = result["test_accuracy"]; // null: no evaluation
    std::cerr << "troupe train: test accuracy "
              << (acc.is_number() ? std::to_string(acc.get<double>()) : "none")
              << " after " << result["seconds"].get<double>() << " s, "
              << static_cast<long>(result["samples_per_sec"].get<double>())
              << " samples/s\n";
    if (result.contains("error"))
      std::cerr << "troupe train: error: " << result["error"].get<std::string>()
                << '\n';
    if (json)
      std::cout << result.dump() << std::endl;
    return result.contains("error") ? 1 : 0;
  });
}

} // namespace troupe::apps
