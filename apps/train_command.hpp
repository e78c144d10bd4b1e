#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/cli.hpp"
#include "apps/link_flags.hpp"

namespace troupe::apps {

/// Everything `troupe train` can be told. Zero means "the model's default"
/// for lr and epochs, and "no limit" for the limits.
struct train_options {
  std::string algo = "sgd";
  std::string model = "mlp";
  std::string data = "fashion-mnist";
  bool standardize = true; ///< scale inputs to mean 0, stddev 1 (train stats)
  std::uint64_t workers = 1;
  std::uint64_t shards = 1;
  std::uint64_t batch = 64;
  double lr = 0;
  std::uint64_t seed = 1;
  double epochs = 0;
  double max_seconds = 0;
  double target_accuracy = 0;
  std::uint64_t max_steps = 0;
  std::uint64_t train_examples = 0; ///< use only the first N training examples
  std::string optimizer;            ///< empty: momentum (lsgd: nesterov)
  double momentum = 0.9;
  double weight_decay = -1; ///< negative: 0 (lsgd: 1e-4)
  std::string schedule = "step";
  double lr_decay = 0;       ///< step schedule factor (0: model default)
  double lr_step_epochs = 0; ///< step schedule period in epochs (0: default)
  double warmup_epochs = 0;
  double eval_every = 0; ///< epochs between test evaluations (0: auto)
  std::string progress = "auto";
  bool json = false;
  // -- parameter-server and synchronous algorithms (downpour, sync) ---------
  std::uint64_t n_fetch = 1;         ///< downpour: fetch every n steps
  std::uint64_t n_push = 1;          ///< downpour: push every n steps
  std::int64_t staleness_bound = -1; ///< SSP bound s (-1: none)
  bool staleness_aware = false;      ///< server rate / max(staleness, 1)
  std::uint64_t warm_start_steps = 0;
  std::string server_optimizer; ///< empty: --optimizer
  double local_lr = -1;         ///< downpour replica rate (-1: auto)
  std::uint64_t threads = 0;    ///< scheduler threads (0: one per core)
  double request_timeout = 60;  ///< seconds
  // -- consensus algorithms (easgd, lsgd) ------------------------------------
  std::uint64_t tau = 4;          ///< steps between exchanges / local rounds
  double alpha = 0;               ///< easgd moving rate (0: 0.9 / workers)
  double easgd_momentum = 0;      ///< EAMSGD's delta (0: plain EASGD)
  std::uint64_t groups = 0;       ///< lsgd groups (0: one per node, or one)
  double lambda = 0.1;            ///< lsgd local pull strength
  double lambda_g = 0.1;          ///< lsgd global pull strength
  std::uint64_t tau_g = 16;       ///< lsgd steps between global rounds
  std::uint64_t score_window = 0; ///< lsgd losses in the score (0: tau)
  // -- decentralized algorithms (sgp, dssync, shadow) -----------------------
  std::uint64_t peers = 1;      ///< sgp out-peers per step (1 or 2)
  std::uint64_t overlap = 0;    ///< sgp bound tau on in-peer staleness
  std::uint64_t group_size = 2; ///< dssync group size m
  std::string shadow = "ma";    ///< shadow: easgd | ma | bmuf
  double shadow_period = 0;     ///< shadow: seconds between rounds
  double block_momentum = -1;   ///< bmuf eta_b (-1: 1 - 1 / workers)
  double block_lr = 1;          ///< bmuf zeta
  // -- gradient compression (downpour, sync) --------------------------------
  std::string compress = "none"; ///< adacomp | topk | onebit | none
  std::uint64_t bin_fc = 500;    ///< AdaComp bin length, dense layers
  std::uint64_t bin_conv = 50;   ///< AdaComp bin length, conv layers
  double topk_fc = 0.01;         ///< top-k density, dense layers
  double topk_conv = 0.01;       ///< top-k density, conv layers
  double gossip_gamma = 0.5;     ///< sgp with compression: consensus step
  // -- Sandblaster L-BFGS (lbfgs) --------------------------------------------
  std::uint64_t portions = 0;       ///< portions per batch (0: automatic)
  std::uint64_t memory = 10;        ///< L-BFGS history pairs m
  double gradient_tolerance = 1e-6; ///< stop below this gradient norm
  bool backups = true;              ///< backup copies at the end of a pass
  // -- distributed jobs (not part of the job's spec) ----------------------
  std::string listen;        ///< HOST:PORT: place the roles on joined nodes
  std::uint64_t expect = 0;  ///< nodes to wait for (with --listen)
  bool port_guard = true;    ///< check frames on a plaintext --listen port
  std::string monitor;       ///< HOST:PORT of the monitoring endpoint
  std::string monitor_token; ///< bearer token it requires (empty: none)
  std::string report;        ///< directory for curves (CSV, SVG) and result
  link_flags link;
  /// Called with the open port before nodes are awaited (troupe launch).
  std::function<void(std::uint16_t)> on_listening;
};

/// The job's spec: the options every node builds the same job from (the
/// distributed-job flags left out), as JSON text.
std::string to_spec(const train_options& o);

/// Reads a spec; throws std::invalid_argument if it is not one.
train_options from_spec(const std::string& spec);

/// Binds every `troupe train` flag to `o` (troupe launch takes them too).
void add_train_options(option_parser& p, train_options& o);

/// Runs `troupe train` with parsed options and returns the final result
/// object. Throws usage_error for inconsistent options, optim::data_error for
/// unusable data, std::domain_error when training diverges.
nlohmann::json run_train(train_options opts);

/// Entry point of `troupe train`: parses `args`, runs, prints. Returns the
/// process exit status (0 ok, 1 runtime error, 2 usage error).
int train_main(const std::vector<std::string>& args);

/// Runs and prints like train_main, with options already parsed.
int train_main_with(train_options opts);

} // namespace troupe::apps
