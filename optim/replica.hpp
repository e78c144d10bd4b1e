#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "optim/dataset.hpp"
#include "optim/sequential.hpp"
#include "optim/synthetic.hpp"

namespace troupe::optim {

/// Outcome of one gradient evaluation.
struct step_result {
  double loss = 0;         ///< mean minibatch loss before the update
  std::size_t samples = 0; ///< examples in the minibatch
  double lr = 0;           ///< learning rate used (set by the trainer)
};

/// A worker's replica: what it trains. A flat parameter vector, its gradient
/// buffer, and a stream of minibatches from the worker's own examples. Every
/// algorithm's worker computes through this interface; models and the synthetic
/// test problems implement it.
class replica {
public:
  virtual ~replica() = default;

  /// Number of parameters.
  virtual std::size_t size() const noexcept = 0;

  /// The replica's parameters (size() values).
  virtual float* params() noexcept = 0;

  /// The gradient buffer compute() fills (size() values).
  virtual float* grads() noexcept = 0;

  /// Draws the next minibatch, writes the mean gradient over it to grads()
  /// and returns the loss. Throws std::domain_error if the loss is not finite
  /// (divergence).
  virtual step_result compute() = 0;

  /// Minibatches per epoch of this worker's examples.
  virtual std::size_t batches_per_epoch() const noexcept = 0;

  /// The model and the batch of the last compute(), whose layers still hold
  /// that pass's inputs and output gradients (optim/sufficient_factors.hpp);
  /// both null where the gradient is not the model's own (wrappers that
  /// change it, synthetic problems).
  struct pass_view {
    const sequential<float>* model = nullptr;
    const matrix<float>* batch = nullptr;
  };
  virtual pass_view last_pass() const noexcept {
    return {};
  }

  /// Whether this replica's gradients are an attack (optim/attack.hpp's
  /// byzantine_replica): its worker does not stop on non-finite ones.
  virtual bool byzantine() const noexcept {
    return false;
  }

  /// From now on computes on flipped class labels, y -> classes - 1 - y (a
  /// Byzantine worker's label-flip attack, optim/attack.hpp). Returns false
  /// if this replica has no class labels (the default).
  virtual bool flip_labels(std::int32_t classes) {
    (void)classes;
    return false;
  }

  /// Completed passes over this worker's examples.
  virtual std::size_t epoch() const noexcept = 0;

  /// Adds examples to this worker's own (a lost worker's share); returns how
  /// many were added. Throws std::logic_error if the replica cannot take
  /// more examples.
  virtual std::size_t add_examples(const std::vector<std::size_t>& indices);

  /// Gives up `num`/`den` of this worker's examples (a joining worker's
  /// share), chosen among those not drawn yet this epoch and at most all
  /// but one of those (batch_iterator::cede): they leave this worker's
  /// epochs. Returns them. Throws std::logic_error if the replica cannot
  /// give examples up.
  virtual std::vector<std::size_t> cede_examples(std::uint32_t num,
                                                 std::uint32_t den);

  /// Writes the parameters and the position in the minibatch stream as
  /// tensors named `prefix` + field. The default throws std::logic_error:
  /// this replica cannot be checkpointed.
  virtual void save_state(state_writer& w, const std::string& prefix) const;

  /// Reads what save_state() wrote; throws data_error naming the file and
  /// the tensor if it does not fit this replica (another size, seed, part,
  /// batch size, or an example it does not have). Nothing changes then. The
  /// default throws std::logic_error.
  virtual void load_state(const state_reader& r, const std::string& prefix);
};

/// A sequential model trained with its loss on a data set with class labels
/// (cross-entropy, binary cross-entropy) or regression targets (mse).
/// Neither the model nor the data set is owned.
class model_replica : public replica {
public:
  /// Throws std::invalid_argument if `data` has no labels (no targets, for
  /// mse) or its examples do not fit the model's input. Seeds the model's
  /// dropout masks from `seed`.
  model_replica(sequential<float>& model, const dataset& data,
                std::vector<std::size_t> indices, std::size_t batch_size,
                std::uint64_t seed, batch_part part = {});

  std::size_t size() const noexcept override;
  float* params() noexcept override;
  float* grads() noexcept override;
  step_result compute() override;
  bool flip_labels(std::int32_t classes) override;
  std::size_t batches_per_epoch() const noexcept override;
  std::size_t epoch() const noexcept override;
  std::size_t add_examples(const std::vector<std::size_t>& indices) override;
  std::vector<std::size_t> cede_examples(std::uint32_t num,
                                         std::uint32_t den) override;
  void save_state(state_writer& w, const std::string& prefix) const override;
  void load_state(const state_reader& r, const std::string& prefix) override;

  sequential<float>& model() noexcept {
    return *model_;
  }

  pass_view last_pass() const noexcept override {
    return {model_, &x_};
  }

private:
  sequential<float>* model_;
  const dataset* data_;
  batch_iterator batches_;
  matrix<float> x_;
  std::vector<std::int32_t> labels_;
  std::vector<float> targets_;
  std::int32_t flip_ = 0; ///< labels flipped among this many classes (0: no)
};

/// Adds examples `indices` of `data` to a worker's stream (a lost worker's
/// share); returns how many. Throws std::out_of_range naming the data set
/// for an index past its end (nothing is added then).
std::size_t add_to_stream(batch_iterator& batches, const dataset& data,
                          const std::vector<std::size_t>& indices);

/// `num`/`den` of a worker's examples, as far as this epoch has not drawn
/// them yet (batch_iterator::cede keeps the rest of the epoch whole): a
/// joining worker's share. Throws std::invalid_argument unless num < den.
std::vector<std::size_t> cede_share(batch_iterator& batches, std::uint32_t num,
                                    std::uint32_t den);

/// Where a worker's minibatches come from, without a model: its data set,
/// its examples and its batch stream's settings (batch_iterator). The
/// replica make_model_replica builds over the same source draws the same
/// batches; roles that hand batches to a model held elsewhere (a pipeline's
/// head, algos/pipeline) draw them from here.
struct batch_source {
  std::shared_ptr<const dataset> data;
  std::vector<std::size_t> indices;
  std::size_t batch_size = 0;
  std::uint64_t seed = 0;
  batch_part part{};
};

/// A model_replica that owns its model (built by make_model<float>(name) and
/// initialised with `init_seed`) and shares its data set.
std::unique_ptr<replica> make_model_replica(
    const std::string& model, std::shared_ptr<const dataset> data,
    std::vector<std::size_t> indices, std::size_t batch_size,
    std::uint64_t seed, std::uint64_t init_seed, batch_part part = {});

/// The same over `source`.
std::unique_ptr<replica> make_model_replica(const std::string& model,
                                            batch_source source,
                                            std::uint64_t init_seed);

/// A synthetic LSQ or LOGREG problem (algorithms.md §0), evaluated in double
/// on float parameters. The problem is shared, not copied.
template <class Problem>
class synthetic_replica : public replica {
public:
  /// Starts at x = 0 on the examples `indices` of `problem`.
  synthetic_replica(std::shared_ptr<const Problem> problem,
                    std::vector<std::size_t> indices, std::size_t batch_size,
                    std::uint64_t seed, batch_part part = {});

  std::size_t size() const noexcept override;
  float* params() noexcept override;
  float* grads() noexcept override;
  step_result compute() override;
  std::size_t batches_per_epoch() const noexcept override;
  std::size_t epoch() const noexcept override;
  std::vector<std::size_t> cede_examples(std::uint32_t num,
                                         std::uint32_t den) override;
  void save_state(state_writer& w, const std::string& prefix) const override;
  void load_state(const state_reader& r, const std::string& prefix) override;

private:
  std::shared_ptr<const Problem> problem_;
  batch_iterator batches_;
  flat_storage<float> params_; ///< 64-byte aligned, like a model's
  flat_storage<float> grads_;
};

} // namespace troupe::optim
