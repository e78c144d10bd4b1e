// An algorithm as the command line, the job spec and the job builder see
// it: the runtime half (actors/algorithm.hpp) plus its own options. One
// object holds the algorithm's option values; bind() exposes them as flags.
// The job builder clones it, and build() resolves the copy's settings into
// its own members (groups, periods, the workers' local steps, a driver's
// run); the built copy becomes the job's algorithm, const from then on.
//
// Flags live under the algorithm's own group: an option bound with category
// "?easgd" is `--tau` as well as `--easgd.tau` (CAF's flat CLI names), and
// `troupe train --help` lists it under easgd. Only the chosen algorithm's
// flags are bound; a flag of another algorithm is refused by name.

#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <nlohmann/json.hpp>

#include "actors/algorithm.hpp"
#include "algos/job_options.hpp"
#include "optim/dataset.hpp"
#include "optim/range_table.hpp"
#include "optim/schedule.hpp"

namespace troupe::actors {
class role_registry;
} // namespace troupe::actors

namespace troupe::algos {

/// How the workers see the training data.
enum class data_layout {
  parts,         ///< each worker its own part (iid), its own batches
  shared_stream, ///< one stream of global batches, split among the workers
};

/// Who runs a job of the algorithm.
enum class runner {
  coordinator, ///< the job coordinator (actors/coordinator.hpp)
  own_driver,  ///< the algorithm itself (actors::algorithm::run)
  single_loop, ///< one worker's training loop in this process, no actors
};

/// What an algorithm's build step reads and fills.
struct job_build {
  const job_options& options;
  /// The shared settings (workers, shards, init, server, policy, ...);
  /// build() may adjust them (no shards, the policy's pacing).
  actors::job_config& job;
  /// The training set, all of it (the first `examples` are used).
  std::shared_ptr<const optim::dataset> train{};
  /// Training examples used.
  std::size_t examples = 0;
  /// Batches per worker per epoch (shared stream: global batches).
  std::size_t batches_per_epoch = 0;
  /// Batches of the whole training set per epoch.
  std::size_t batches = 0;
  /// Steps each worker takes; an algorithm with its own driver sets its
  /// step budget here (Sandblaster: the iteration limit), for the progress
  /// display.
  std::uint64_t steps_per_worker = 0;
  /// The model's layers (compression picks its settings per layer kind).
  std::vector<optim::named_range> layers{};

  /// The job's rate schedule counted in server updates, `per_epoch` of
  /// them per epoch.
  optim::schedule_options server_schedule(double per_epoch) const;

  /// The workers' own rate schedule, counted in their own steps.
  optim::schedule_options local_schedule() const;
};

class algorithm : public actors::algorithm {
public:
  /// One line for --help.
  virtual std::string summary() const = 0;

  /// A fresh copy with the same option values.
  virtual std::shared_ptr<algorithm> clone() const = 0;

  /// Binds the algorithm's flags to its members, category "?" + name().
  virtual void bind(caf::config_option_set& set);

  /// Checks the algorithm's flags that were given (`given`: their names
  /// without the group) against the job's options; throws
  /// std::invalid_argument naming the flag.
  virtual void check_flags(const job_options& o,
                           const std::set<std::string>& given) const;

  /// Fills in the job's defaults that depend on the algorithm (its rate
  /// and optimizer), given the model's default rate; before the common
  /// checks.
  virtual void resolve(job_options& o, double model_lr) const;

  /// Common flags that do not apply to the algorithm (names); given, they
  /// are refused.
  virtual std::vector<std::string> ignored_flags() const;

  /// How the workers see the training data.
  virtual data_layout layout() const noexcept;

  /// Who runs its jobs.
  virtual runner run_by() const noexcept;

  /// Whether the job has parameter shards (--shards applies).
  virtual bool uses_shards(const job_options& o) const;

  /// Resolves the algorithm's settings from the job's options into its
  /// own members and adjusts the shared ones in `b.job` (called after
  /// resolve and the checks, on the copy that becomes `b.job.algorithm`);
  /// throws std::invalid_argument naming the flag that cannot apply.
  virtual void build(job_build& b);

  /// What serves the workers, for the job's description ("4 shards", "no
  /// shards", "2 groups"); after build(). The default: the job's shards.
  virtual std::string servers(const actors::job_config& job) const;

  /// The job's one-line description for the progress display, after
  /// build(). The default: the algorithm, its workers and servers(), the
  /// model and data, the steps, batch and seed.
  virtual std::string describe(const job_build& b) const;

  /// A run by its own driver (runner::own_driver): completes the driver's
  /// final JSON given the test set (the final point's test accuracy and
  /// loss, the algorithm's figures) and puts the final model's parameters
  /// in `params` (left empty if the run yields none: nothing is saved);
  /// after build(). The default adds nothing.
  virtual void complete_result(nlohmann::json& result,
                               const optim::dataset& test,
                               std::vector<float>& params) const;

  /// Registers the algorithm's own roles, those its run asks a node agent
  /// to spawn by name (ShadowSync's syncer, Sandblaster's shards and
  /// workers); register_roles() (registry.hpp) collects every registered
  /// algorithm's before a node joins. The default has none.
  virtual void add_roles(actors::role_registry& roles) const;
};

/// An algorithm with its options, owned by the job being configured.
using algorithm_handle = std::shared_ptr<algorithm>;

} // namespace troupe::algos
