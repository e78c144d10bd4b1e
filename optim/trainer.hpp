#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "optim/dataset.hpp"
#include "optim/optimizer.hpp"
#include "optim/replica.hpp"
#include "optim/schedule.hpp"
#include "optim/sequential.hpp"

namespace troupe::optim {

/// Loss and accuracy of a model over a data set.
struct evaluation {
  double loss = 0;     ///< mean loss (the model's: optim/loss.hpp)
  double accuracy = 0; ///< fraction of correct predictions; for a
                       ///< regression model (mse), R^2 = 1 - SSE / SST
  std::size_t samples = 0;
};

/// Evaluates `model` on all of `data` in chunks of `chunk` examples. Use the
/// training batch size: the model's buffers then keep their size, and small
/// chunks keep convolution scratch in cache (lenet: 0.17 s per 10k at 64,
/// 0.3-0.5 s at 256-1000).
evaluation evaluate(sequential<float>& model, const dataset& data,
                    std::size_t chunk = 64);

/// Examples calibrate() reads by default.
inline constexpr std::size_t calibration_examples = 2048;

/// Estimates the model's buffers (batch norm's running statistics) for its
/// current parameters from the first `examples` examples of `train`, in
/// batches of `chunk` (PreciseBN: the batches' statistics averaged with
/// equal weights). Every algorithm exchanges parameters only; this is how an
/// evaluated or saved model gets buffers that belong to its parameters
/// (docs/algorithms.md "Buffers"). Nothing to do without buffers.
void calibrate(sequential<float>& model, const dataset& train,
               std::size_t examples = calibration_examples,
               std::size_t chunk = 64);

/// The examples calibrate(model, train, examples, chunk) reads, as a data
/// set of their own (features only): calibrating on it gives the same
/// buffers, bit for bit, without keeping the whole training set.
dataset calibration_set(const dataset& train,
                        std::size_t examples = calibration_examples);

/// The training step shared by every algorithm: next minibatch of the
/// worker's own data -> loss and gradient -> local optimizer step. Workers of
/// distributed algorithms call `compute` and decide themselves what to do with
/// the gradient (push it, apply it, compress it); `step` is compute + apply.
class local_trainer {
public:
  /// Trains `model` (not owned; must outlive the trainer) on the examples
  /// `indices` of `data` (not owned).
  local_trainer(sequential<float>& model, const dataset& data,
                std::vector<std::size_t> indices, std::size_t batch_size,
                const optimizer_options& opt, schedule lr, std::uint64_t seed);

  /// Draws the next minibatch and fills model().grads(); returns the loss.
  /// Throws std::domain_error if the loss is not finite
  /// (divergence), before anything is applied.
  step_result compute();

  /// Applies model().grads() with the local optimizer at the scheduled rate
  /// and advances the step counter.
  void apply();

  /// compute() followed by apply().
  step_result step();

  /// Optimizer steps taken so far.
  std::size_t steps() const noexcept {
    return steps_;
  }

  /// Completed passes over the trainer's examples.
  std::size_t epoch() const noexcept {
    return replica_.epoch();
  }

  /// Minibatches per epoch.
  std::size_t batches_per_epoch() const noexcept {
    return replica_.batches_per_epoch();
  }

  sequential<float>& model() noexcept {
    return replica_.model();
  }

  const schedule& lr_schedule() const noexcept {
    return lr_;
  }

  /// Writes the replica's state (parameters, minibatch position), the
  /// optimizer's and the step count as tensors named `prefix` + field (the
  /// schedule is a function of the step count).
  void save(state_writer& w, const std::string& prefix) const;

  /// Reads what save() wrote; throws data_error naming the file and the
  /// tensor if it does not fit this trainer. Nothing changes then.
  void load(const state_reader& r, const std::string& prefix);

private:
  model_replica replica_;
  optimizer_options opt_options_;
  std::unique_ptr<optimizer<float>> opt_;
  schedule lr_;
  std::size_t steps_ = 0;
};

} // namespace troupe::optim
