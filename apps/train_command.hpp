#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/stop_request.hpp"
#include "algos/algorithm.hpp"
#include "apps/cli.hpp"
#include "apps/link_flags.hpp"
#include "optim/checkpoint_dir.hpp"

namespace troupe::apps {

struct cluster_job;

/// Everything `troupe train` can be told: the job's common options
/// (algos/job_options.hpp), the chosen algorithm with its own options, and
/// how to run and show the job.
struct train_options : algos::job_options {
  /// The algorithm's name; `algorithm` holds its options once selected.
  std::string algo = "sgd";
  algos::algorithm_handle algorithm;
  /// The flags given on the command line or in --config (their names):
  /// an algorithm checks only the flags that were given.
  std::set<std::string> given;
  std::string progress = "auto";
  bool json = false;
  /// The command, as its messages name it ("troupe simulate" runs the same
  /// job).
  std::string program = "troupe train";
  /// The most workers a job may have (troupe simulate allows more: its
  /// nodes are not processes).
  std::uint64_t max_workers = 4096;
  // -- distributed jobs (not part of the job's spec) ----------------------
  std::string listen;        ///< HOST:PORT: place the roles on joined nodes
  std::uint64_t expect = 0;  ///< nodes to wait for (with --listen)
  bool port_guard = true;    ///< check frames on a plaintext --listen port
  std::string monitor;       ///< HOST:PORT of the monitoring endpoint
  std::string monitor_token; ///< bearer token it requires (empty: none)
  /// --monitor-linger: SECONDS or "forever" the endpoint stays up after
  /// the job (empty: it closes with the job); linger_seconds parsed.
  std::string monitor_linger;
  double linger_seconds = 0;
  /// Adds the run's options (algo, model, seed, ...) to its result; set by
  /// run_train, called before the report is written.
  std::function<void(nlohmann::json&)> complete_result;
  std::string report; ///< directory for curves (CSV, SVG) and result
  std::string save;   ///< file for the final model (safetensors)
  link_flags link;
  // -- durable jobs (not part of the job's spec) ---------------------------
  std::string checkpoint_dir;           ///< DIR for checkpoints (empty: none)
  std::string checkpoint_every = "60s"; ///< DURATION (s, m, h) or STEPS
  std::uint64_t keep = 3;               ///< complete checkpoints kept
  std::string resume;                   ///< DIR to resume the job from
  /// The checkpoint --resume continues (read by apply_resume).
  std::shared_ptr<const optim::checkpoint> resumed;
  /// Called with the open port before nodes are awaited (troupe launch).
  std::function<void(std::uint16_t)> on_listening;
  /// Ends the run early, as the time limit does (Ctrl-C); may be null.
  std::shared_ptr<actors::stop_request> stop;
  /// Called with the final parameters (those of the final evaluation) by
  /// every algorithm whose run yields them; may be empty.
  std::function<void(const float*, std::size_t)> on_final_params;
  /// Runs a coordinator's job instead of here or on joined nodes (troupe
  /// simulate: on simulated nodes); given the job and how it was built.
  std::function<nlohmann::json(actors::job_config, const cluster_job&)>
      run_placed_job;

  /// The algorithm (selected with select_algorithm() if not yet).
  algos::algorithm& algorithm_ref();
  const algos::algorithm& algorithm_ref() const;
};

/// Makes `o.algorithm` the registered algorithm `o.algo` with its default
/// options (unless it is that already); throws usage_error listing the
/// registered ones for an unknown name.
void select_algorithm(train_options& o);

/// The options of the algorithm `o` selected, as its type (tests and
/// benchmarks set them this way); throws std::invalid_argument if `o`
/// selected another algorithm.
template <class T>
T& algorithm_options(train_options& o) {
  select_algorithm(o);
  auto* p = dynamic_cast<T*>(o.algorithm.get());
  if (p == nullptr)
    throw std::invalid_argument("--algo=" + o.algo
                                + " has not the options asked for");
  return *p;
}

/// The job's spec: the options every node builds the same job from (the
/// distributed-job flags left out), as JSON text.
std::string to_spec(const train_options& o);

/// Reads a spec; throws std::invalid_argument if it is not one.
train_options from_spec(const std::string& spec);

/// Binds every `troupe train` flag to `o` (troupe launch takes them too):
/// the common ones, and the algorithm's that `args` (and their --config)
/// choose with --algo. A flag of another algorithm is refused by name.
void add_train_options(option_parser& p, train_options& o,
                       const std::vector<std::string>& args = {});

/// Binds the job's common flags (the ones its spec carries) to `o`.
void add_job_flags(option_parser& p, algos::job_options& o);

/// Runs `troupe train` with parsed options and returns the final result
/// object. Throws usage_error for inconsistent options, optim::data_error for
/// unusable data, std::domain_error when training diverges.
nlohmann::json run_train(train_options opts);

/// The checks run_train makes of its options before it loads any data
/// (usage_error on a bad flag), without running anything: troupe launch
/// --launcher makes them on every rank, so a node fails as its coordinator
/// would instead of waiting for it.
void check_train_flags(train_options opts);

/// Entry point of `troupe train`: parses `args`, runs, prints. Returns the
/// process exit status (0 ok, 1 runtime error, 2 usage error).
int train_main(const std::vector<std::string>& args);

/// Runs and prints like train_main, with options already parsed; messages
/// name `program`.
int train_main_with(train_options opts,
                    const std::string& program = "troupe train");

/// The run's last line for a person: why it stopped, the test accuracy
/// (and whether the target was reached), seconds, epochs and samples/s.
std::string summary_line(const nlohmann::json& result,
                         const std::string& program = "troupe train");

} // namespace troupe::apps
