// A pipelined replica's head: the job's worker for the replica. It holds no
// parameters; it draws the replica's batches, splits each into micro-batches
// for the first stage (inputs) and the last (labels), and a step is done
// when every stage has pushed its part of the gradient to its shards. The
// coordinator counts its steps, pauses it for checkpoints and reassigns its
// work if it is lost, as for any worker.

#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actors/comm_policy.hpp"
#include "optim/dataset.hpp"
#include "optim/replica.hpp"

namespace troupe::algos {

/// The head's replica: a batch stream without a model (size() is 0). The
/// policy draws each step's batch (draw()) and sets the step's loss from
/// the last stage's report before compute() returns it.
class head_replica : public optim::replica {
public:
  head_replica(optim::batch_source source, bool regression);

  std::size_t size() const noexcept override {
    return 0;
  }
  float* params() noexcept override {
    return nullptr;
  }
  float* grads() noexcept override {
    return nullptr;
  }
  /// The step's loss and samples; throws std::domain_error if the loss is
  /// not finite (divergence).
  optim::step_result compute() override;
  std::size_t batches_per_epoch() const noexcept override;
  std::size_t epoch() const noexcept override;
  std::size_t add_examples(const std::vector<std::size_t>& indices) override;
  std::vector<std::size_t> cede_examples(std::uint32_t num,
                                         std::uint32_t den) override;
  void save_state(optim::state_writer& w,
                  const std::string& prefix) const override;
  void load_state(const optim::state_reader& r,
                  const std::string& prefix) override;

  /// Draws the next batch into x(), labels(), targets(); returns its size.
  std::size_t draw();

  const optim::matrix<float>& x() const noexcept {
    return x_;
  }
  const std::vector<std::int32_t>& labels() const noexcept {
    return labels_;
  }
  const std::vector<float>& targets() const noexcept {
    return targets_;
  }

  void set_loss(double loss) noexcept {
    loss_ = loss;
  }

private:
  optim::batch_source source_;
  optim::batch_iterator batches_;
  bool regression_;
  optim::matrix<float> x_;
  std::vector<std::int32_t> labels_;
  std::vector<float> targets_;
  std::size_t samples_ = 0;
  double loss_ = 0;
};

/// The head's policy for replica `replica` of a pipeline of `stages` stages
/// fed `micros` micro-batches a step.
std::unique_ptr<actors::comm_policy>
make_head_policy(messages::worker_id replica, std::uint32_t stages,
                 std::uint32_t micros);

} // namespace troupe::algos
