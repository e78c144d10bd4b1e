#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

#include "messages/control.hpp"
#include "messages/messages.hpp"

// The messages of a pipelined replica (algorithms.md "Pipeline", DistBelief's
// model parallelism): its head hands micro-batches to the first and last
// stages, the stages pass activations forward and their gradients backward,
// and each stage reports to the head when its part of a step is pushed.
// Every message names the replica's generation: after a stage is rebuilt the
// replica's generation grows, and what an older one sent is dropped.

namespace troupe::messages {

// -- stage_batch_msg ----------------------------------------------------------

/// A micro-batch from a replica's head: its inputs (features x samples,
/// column-major) for the first stage, its labels or regression targets for
/// the last; `scale` is its share of the step's samples.
struct stage_batch_msg {
  worker_id replica = 0;
  std::uint64_t generation = 0;
  std::uint64_t step = 0;
  std::uint32_t micro = 0;
  std::uint32_t samples = 0;
  real scale;
  tensor x;                         ///< empty for the last stage
  std::vector<std::int32_t> labels; ///< empty for the first stage
  std::vector<float> targets;       ///< regression data only
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_batch_msg& x) {
  return f(caf::meta::type_name("stage_batch_msg"), x.replica, x.generation,
           x.step, x.micro, x.samples, x.scale, x.x, x.labels, x.targets);
}

// -- stage_tensor_msg ---------------------------------------------------------

/// An activation going forward to the next stage, or (backward) the gradient
/// of one going back to the previous: `rows` values per sample.
struct stage_tensor_msg {
  worker_id replica = 0;
  std::uint64_t generation = 0;
  std::uint64_t step = 0;
  std::uint32_t micro = 0;
  bool backward = false;
  std::uint32_t rows = 0;
  tensor values;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_tensor_msg& x) {
  return f(caf::meta::type_name("stage_tensor_msg"), x.replica, x.generation,
           x.step, x.micro, x.backward, x.rows, x.values);
}

// -- stage_done_msg -----------------------------------------------------------

/// A stage's part of step `step` is done and its gradient pushed (and
/// flushed) to its shards. The last stage reports the step's loss (the
/// micro-batches' losses weighed by their shares); the others NaN.
struct stage_done_msg {
  worker_id replica = 0;
  std::uint32_t stage = 0;
  std::uint64_t generation = 0;
  std::uint64_t step = 0;
  real loss;
  std::uint64_t busy_ns = 0; ///< computing, this step
  std::uint64_t idle_ns = 0; ///< waiting for a neighbour, this step
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_done_msg& x) {
  return f(caf::meta::type_name("stage_done_msg"), x.replica, x.stage,
           x.generation, x.step, x.loss, x.busy_ns, x.idle_ns);
}

// -- stage_wiring_msg ---------------------------------------------------------

/// Who a replica's parts talk to, for generation `generation`: its head and
/// its stages in order. Sent by the coordinator to the head and to every
/// stage, again with a new generation after a stage was rebuilt.
struct stage_wiring_msg {
  std::uint64_t generation = 0;
  caf::actor head;
  std::vector<caf::actor> stages;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_wiring_msg& x) {
  return f(caf::meta::type_name("stage_wiring_msg"), x.generation, x.head,
           x.stages);
}

/// One-line descriptions for logs (tensors by their length).
std::string to_string(const stage_batch_msg& x);
std::string to_string(const stage_tensor_msg& x);
std::string to_string(const stage_done_msg& x);
std::string to_string(const stage_wiring_msg& x);

} // namespace troupe::messages
