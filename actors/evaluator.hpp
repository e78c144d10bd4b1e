#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include <caf/typed_event_based_actor.hpp>

#include "actors/comm_policy.hpp"
#include "actors/interfaces.hpp"
#include "actors/probe.hpp"
#include "optim/trainer.hpp"

namespace troupe::actors {

/// Evaluates a flat parameter vector (on the test set, say); runs on the
/// evaluator's thread only.
using evaluate_fn = std::function<optim::evaluation(const float*, std::size_t)>;

/// Settings of the evaluator.
struct evaluator_config {
  std::vector<shard_ref> shards;
  /// If set, the parameters are read from it in one fetch of the whole
  /// vector instead of from the shards (LSGD: the leader board, which
  /// forwards to the global leader).
  caf::actor source;
  /// If not empty, the evaluated model is the mean of these actors' whole
  /// vectors (SGP's z_i, DS-Sync's and ShadowSync's workers, by rank); an
  /// actor that does not answer, or that leave_atom names (lost), is left
  /// out of the mean.
  std::vector<caf::actor> average;
  std::size_t parameters = 0;
  /// May be empty: then only the parameters' hash is reported.
  evaluate_fn evaluate;
  caf::duration request_timeout{std::chrono::seconds{60}};
  /// Optional: receives a copy of every evaluated parameter vector (tests,
  /// saving the final model).
  std::shared_ptr<std::vector<float>> last_params;
};

/// The state of an evaluator actor.
struct evaluator_state {
  static inline const char* name = "evaluator";
  evaluator_config config;
  std::vector<float> params;
  std::uint64_t version = 0;
  std::vector<double> sum; ///< averaging: the sum of the answers
  probe_ref probe;
};

/// Spawn with `sys.spawn(evaluator, config)`.
evaluator_actor::behavior_type
evaluator(evaluator_actor::stateful_pointer<evaluator_state> self,
          evaluator_config config);

} // namespace troupe::actors
