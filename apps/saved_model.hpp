// troupe train's models out and in: --init loads a saved model into the
// run's initial model, --save (and --report) write the final one.

#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/progress.hpp"
#include "apps/train_command.hpp"
#include "optim/dataset.hpp"
#include "optim/sequential.hpp"

namespace troupe::apps {

/// Checks --init and --save before any work: the file to start from exists,
/// the file to write can be created; throws usage_error naming the flag.
void check_model_flags(const train_options& o);

/// Overwrites `m`'s parameters with the model `o.init` names (if any),
/// checking that it holds `o.model` for `train`'s sample shape and classes;
/// throws usage_error naming the file and the mismatch, optim::data_error
/// for a malformed file or a tensor that does not match.
void apply_init(const train_options& o, const optim::dataset& train,
                optim::sequential<float>& m);

/// The final model of a run, written by save() where --save and --report
/// ask for it.
struct final_model {
  /// Keeps what the model file needs from the run (before its data moves),
  /// among it the examples that estimate the buffers of a model that has
  /// some (batch norm's statistics: optim::calibration_set).
  final_model(const train_options& o, const optim::dataset& train,
              optim::scaling scaling);

  /// The final parameters (empty: the run yielded none).
  std::vector<float> params;

  /// Writes --save and --report's model.safetensors; adds "saved_model"
  /// (the paths) or "save_error" to `result`, and a line to `bar`.
  void save(nlohmann::json& result, progress& bar) const;

private:
  std::string model_, save_, report_, options_;
  optim::shape sample_shape_;
  int classes_;
  std::uint64_t eval_batch_;
  optim::scaling scaling_;
  optim::dataset calibration_;
};

} // namespace troupe::apps
