// One stage of a pipelined model replica (optim/pipeline.hpp) and the order
// in which it runs its micro-batches under GPipe or 1F1B; the actors of
// algos/pipeline run one such stage each, and run_pipeline() below runs all
// of them in one thread, as the reference the tests compare against.

#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "optim/loss.hpp"
#include "optim/pipeline.hpp"
#include "optim/sequential.hpp"

namespace troupe::optim {

/// How micro-batches flow through the stages.
enum class pipeline_schedule {
  /// GPipe: a step's M micro-batches all go forward, then all come back
  /// (the last first); the stages update once per step, after the flush.
  gpipe,
  /// 1F1B (PipeDream): after a warm-up, every stage alternates one forward
  /// and one backward, with at most S micro-batches in flight, and updates
  /// after every backward; no flush. Weight stashing keeps a micro-batch's
  /// backward on the weights its forward saw.
  one_f_one_b
};

/// "gpipe" or "1f1b".
const char* to_string(pipeline_schedule s) noexcept;

/// Parses "gpipe" or "1f1b"; throws std::invalid_argument listing them.
pipeline_schedule parse_pipeline_schedule(const std::string& name);

/// One pass of one micro-batch on one stage.
struct pipe_op {
  bool forward = true;
  std::size_t micro = 0;
  friend bool operator==(const pipe_op& x, const pipe_op& y) noexcept {
    return x.forward == y.forward && x.micro == y.micro;
  }
};

/// The order in which stage `s` of `stages` runs the passes of micro-batches
/// 0..`micros`-1: one GPipe step of `micros` micro-batches, or a 1F1B run
/// of `micros` micro-batches in all. The last stage runs each backward
/// right after its forward.
std::vector<pipe_op> stage_order(pipeline_schedule sched, std::size_t s,
                                 std::size_t stages, std::size_t micros);

/// The compute of one stage: a sequential model of the stage's layers
/// (build_stage) with a weight version, the inputs of its micro-batches in
/// flight, and their summed gradient.
///
/// A backward needs the activations inside the stage that its forward
/// computed. The stage keeps only each micro-batch's input and recomputes
/// the forward before a backward unless that backward directly follows its
/// own forward (GPipe's re-materialization): layers keep per-pass state
/// (max-pool's choices, dropout's mask), and the recomputation restores it
/// exactly, because dropout is seeded per micro-batch.
///
/// Weight stashing: with it on, the weights a micro-batch's forward saw are
/// kept (one copy per version in use) and its backward runs on them, as
/// PipeDream does; with it off, a backward runs on the current weights.
template <class T>
class pipeline_stage {
public:
  pipeline_stage(sequential<T> model, bool stash, std::uint64_t noise_seed);

  sequential<T>& model() noexcept {
    return model_;
  }
  const sequential<T>& model() const noexcept {
    return model_;
  }

  /// The weights' version; bump_version() after changing model().params().
  std::uint64_t version() const noexcept {
    return version_;
  }
  void bump_version() noexcept {
    ++version_;
  }

  /// Forward pass of micro-batch `micro` (its id, unique among those in
  /// flight) on `x`; returns the activation for the next stage. Not on
  /// the last stage. Throws std::invalid_argument on a wrong input size or
  /// a micro-batch already in flight.
  const matrix<T>& forward(std::uint64_t micro, const matrix<T>& x);

  /// The last stage's forward, loss and backward of micro-batch `micro`,
  /// its gradient scaled by `scale` (its share of the step's samples) and
  /// added to grad_sum(); writes the gradient for the previous stage into
  /// `*din` unless null. Returns the micro-batch's mean loss.
  T forward_backward(std::uint64_t micro, const matrix<T>& x,
                     batch_targets targets, T scale, matrix<T>* din);

  /// Backward pass of micro-batch `micro` given `dout`, the gradient of its
  /// activation; adds its gradient to grad_sum() and writes the gradient
  /// for the previous stage into `*din` unless null. Throws
  /// std::invalid_argument for a micro-batch not in flight.
  void backward(std::uint64_t micro, const matrix<T>& dout, matrix<T>* din);

  /// Drops the micro-batches in flight (a replica restarting).
  void drop_in_flight();

  /// Micro-batches forwarded and not yet backward.
  std::size_t in_flight() const noexcept {
    return flights_.size();
  }

  /// The summed gradient of the backwards since clear_grads().
  const std::vector<T>& grad_sum() const noexcept {
    return grad_sum_;
  }
  void clear_grads();

  /// The version the last backward ran on, and the one its forward saw.
  std::uint64_t last_backward_version() const noexcept {
    return backward_version_;
  }
  std::uint64_t last_forward_version() const noexcept {
    return forward_version_;
  }

  /// Forwards recomputed so far (for the bench and tests).
  std::size_t recomputed() const noexcept {
    return recomputed_;
  }

private:
  struct flight {
    matrix<T> input;
    std::uint64_t version;
  };

  void seed(std::uint64_t micro);
  void accumulate();
  void release(std::uint64_t version);

  sequential<T> model_;
  bool stash_;
  std::uint64_t noise_seed_;
  std::uint64_t version_ = 0;
  std::map<std::uint64_t, flight> flights_;
  // Stashed weights per version, with the number of flights using them.
  std::map<std::uint64_t, std::pair<std::vector<T>, std::size_t>> stashed_;
  std::vector<T> grad_sum_;
  std::vector<T> current_; // the current weights while a stashed set runs
  bool have_last_ = false; // the model holds the activations of last_micro_
  std::uint64_t last_micro_ = 0;
  std::uint64_t last_version_ = 0;
  std::uint64_t backward_version_ = 0;
  std::uint64_t forward_version_ = 0;
  std::size_t recomputed_ = 0;
  matrix<T> dlast_;
};

/// What run_pipeline() needs from its caller: micro-batch `m`'s input
/// (features x samples) and targets, and what to do when stage `s` updates
/// (apply its grad_sum() to its weights, clear it and bump its version).
template <class T>
struct pipeline_feed {
  std::function<const matrix<T>&(std::size_t m)> input;
  std::function<batch_targets(std::size_t m)> targets;
  std::function<T(std::size_t m)> scale;
  std::function<void(std::size_t s)> update;
};

/// Runs `micros` micro-batches through `stages` in one thread under
/// `sched`, each stage in its stage_order(); GPipe updates every stage once
/// at the end (one step), 1F1B after every backward. Returns the
/// micro-batches' losses in order.
template <class T>
std::vector<T> run_pipeline(std::vector<pipeline_stage<T>>& stages,
                            pipeline_schedule sched, std::size_t micros,
                            const pipeline_feed<T>& feed);

} // namespace troupe::optim
