// The data a `troupe train` job starts from: loaded whole, or a sharded data
// directory (optim/data_dir.hpp) of which each worker loads only its files.

#pragma once

#include <functional>
#include <memory>
#include <string>

#include "actors/job.hpp"
#include "apps/train_command.hpp"
#include "optim/data_dir.hpp"
#include "optim/dataset.hpp"

namespace troupe::apps {

/// What load_job_data gives a job.
struct job_data {
  /// The data loaded whole; for a sharded data directory, the first
  /// optim::calibration_examples training examples (they calibrate a
  /// model's buffers, as they would of the whole set) and no test set (the
  /// evaluator loads it: test_set()).
  optim::train_test sets;
  /// A data directory read file by file by the workers; null otherwise.
  std::shared_ptr<const optim::data_dir_summary> dir;
  optim::scaling scaling; ///< --standardize's map (identity without)
  std::string note;       ///< why a data directory was loaded whole
};

/// Whether a job of `o` reads --data=DIR as a sharded data directory: a
/// coordinator's job whose workers train on parts of their own, and no
/// --train-examples. Other jobs load the directory whole.
bool reads_sharded(const train_options& o);

/// Loads --data as the job of `o` reads it, scaled with --standardize
/// (statistics of the training set). Throws optim::data_error naming the
/// file and the problem.
job_data load_job_data(const train_options& o);

/// The test set of `d`, moved out of it (not copied), or for a data
/// directory loaded at the first call (in the evaluator's process only).
/// Thread-safe.
std::function<const optim::dataset&()> take_test_set(job_data& d);

/// A sharded data directory's job: each worker builds an
/// optim::data_dir_replica on its own files and adopts a lost worker's
/// examples by loading them; no node joins the running job (its workers
/// would need examples the live workers cede, which they hold by position
/// in their own files only). Throws usage_error if the workers outnumber
/// the training files.
void shard_by_files(const train_options& o, const job_data& d,
                    actors::job_config& job);

} // namespace troupe::apps
