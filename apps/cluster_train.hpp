#pragma once

#include <nlohmann/json.hpp>

#include "actors/job.hpp"
#include "actors/node_agent.hpp"
#include "actors/stop_request.hpp"
#include "apps/job_data.hpp"
#include "apps/progress.hpp"
#include "apps/train_command.hpp"
#include "net/http_server.hpp"
#include "net/monitor.hpp"
#include "optim/dataset.hpp"
#include "optim/sequential.hpp"

namespace troupe::apps {

/// Checks the options of `o` that depend on its algorithm (the common
/// flags it does not take, and its own flags); throws usage_error naming
/// the flag.
void validate_algorithm(const train_options& o);

/// A cluster job built from options and data, ready to run here or to be
/// built the same way on a node.
struct cluster_job {
  actors::job_config job;
  /// The built algorithm, also job.algorithm (its own settings resolved).
  std::shared_ptr<const algos::algorithm> algorithm;
  std::string fingerprint; ///< model, seed and data (node_agent.hpp)
  double steps_per_epoch = 0;
  std::uint64_t steps_per_worker = 0; ///< a driver's: its step budget
  std::size_t examples = 0;           ///< training examples used
  std::string description;            ///< one line for the progress display
  std::string model;                  ///< its name or description
  optim::shape input;                 ///< a sample's shape
  int classes = 0;                    ///< the data's classes
};

/// Clones the algorithm of `o`, builds the copy over `b` and installs it as
/// `b.job.algorithm`; an invalid_argument of its build() becomes a
/// usage_error.
std::shared_ptr<const algos::algorithm> build_algorithm(const train_options& o,
                                                        algos::job_build& b);

/// The training examples `o` uses of `train` (--train-examples).
std::size_t examples_of(const train_options& o, const optim::dataset& train);

/// The model `o` names, initialized from its seed; throws usage_error if it
/// has fewer parameters than `o.shards`.
optim::sequential<float> initial_model(const train_options& o,
                                       const optim::dataset& train);

/// Builds the job of validated options `o` on loaded, scaled data.
cluster_job prepare_cluster_job(const train_options& o, optim::train_test data);

/// Builds the job of validated options `o` on what load_job_data gave (a
/// sharded data directory: shard_by_files).
cluster_job prepare_cluster_job(const train_options& o, job_data data);

/// Builds the job a coordinator's spec describes (nodes): loads and scales
/// the data as `troupe train` does. Throws with the reason.
actors::built_job build_from_spec(const std::string& spec);

/// The monitoring of a run: the recorder (--monitor or --report) and the
/// HTTP endpoint (--monitor), alive as long as this object.
struct run_monitoring {
  std::shared_ptr<net::job_monitor> monitor;
  std::unique_ptr<net::http_server> endpoint;
  std::string url;
  double linger_seconds = 0; ///< --monitor-linger (kept endpoints)
};

/// The recorder and its endpoint, as `o` asks (--monitor, --report); a run
/// without actors feeds the recorder its steps and evaluations itself.
run_monitoring open_monitoring(const train_options& o, progress& bar);

/// open_monitoring, the recorder hooked into `job`.
run_monitoring attach_monitoring(const train_options& o,
                                 actors::job_config& job, progress& bar);

/// Adds the endpoint's address to `result` and writes --report. With
/// --monitor-linger the endpoint is kept for linger_monitoring().
void finish_monitoring(const train_options& o, run_monitoring& m,
                       nlohmann::json& result, progress& bar);

/// --monitor-linger's value: "" 0, "forever" infinity, else non-negative
/// seconds; throws usage_error otherwise.
double linger_seconds(const std::string& text);

/// --monitor-linger: once the run's result is out, the endpoint kept by
/// finish_monitoring() serves the finished run for the seconds asked
/// (forever: until stopped) or until `stop` is requested (Ctrl-C), then
/// closes. Says so on stderr. Returns at once when nothing was kept.
void linger_monitoring(const actors::stop_request& stop);

/// Runs a built job here, or with `o.listen` on the nodes that join there.
nlohmann::json run_placed(const train_options& o, actors::job_config job,
                          const std::string& fingerprint, progress& bar,
                          actors::runtime_options rt);

/// Model, seed and data in one string: equal on every process that builds
/// the same job.
std::string fingerprint(const std::vector<float>& init,
                        const optim::train_test& data);

/// Trains with `o.algo` = downpour or sync: shards, workers, evaluator and
/// coordinator as actors in this process. `o` is validated and defaults are
/// filled in. Returns the final JSON (without the data and model keys the
/// caller adds).
nlohmann::json run_cluster(const train_options& o, job_data data,
                           progress& bar);

} // namespace troupe::apps
