// One stage of a pipelined replica as an actor (algorithms.md "Pipeline"):
// it holds only its layers' parameters, fetches them from the shards that
// hold its slice and pushes its gradient there, and runs its micro-batches
// in optim::stage_order, taking activations from the stage before it and
// gradients from the stage after it. It obeys the coordinator's wiring only
// and takes each tensor only from the neighbour it expects, checked in size
// before anything is allocated.

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/duration.hpp>
#include <caf/node_id.hpp>

#include "actors/comm_policy.hpp"
#include "optim/pipeline.hpp"
#include "optim/pipeline_stage.hpp"

namespace troupe::algos {

struct stage_config {
  messages::worker_id replica = 0;
  std::uint32_t stage = 0;
  std::uint32_t stages = 1;
  std::string model; ///< name or description
  optim::shape input;
  int classes = 0;
  optim::stage_plan plan;
  /// The stage's fraction of the whole model's cost (cost_share()), which
  /// its passes report to a time model (actors/clock.hpp); 0: estimated
  /// when the stage is built.
  double share = 0;
  /// The shards holding this stage's slice (each within it).
  std::vector<actors::shard_ref> shards;
  optim::pipeline_schedule schedule = optim::pipeline_schedule::gpipe;
  std::uint32_t micros = 1;
  bool stash = true;
  /// The most samples a micro-batch may have (the batch size).
  std::uint32_t max_samples = 1;
  std::uint64_t seed = 0;
  caf::duration request_timeout{std::chrono::seconds{60}};
  /// Only messages from this node wire the stage (the coordinator's).
  caf::node_id owner;
};

/// What a stage counts (its probe's gauges "steps", "dropped", "refused").
struct stage_figures {
  std::uint64_t steps = 0;
  std::uint64_t dropped = 0; ///< messages of another generation or step
  std::uint64_t refused = 0; ///< from the wrong sender or malformed
};

/// Stage `plan`'s fraction of the model's cost: its layers' estimated work
/// (optim::layer_profile::flops) over all the layers' (their parameters'
/// where no layer has an estimate).
double cost_share(const std::vector<optim::layer_profile>& layers,
                  const optim::stage_plan& plan);

/// The message kind a pipeline's messages are counted under ("stage"), by
/// its stages and heads alike.
actors::msg_type stage_kind();

/// Spawns stage `config.stage` of replica `config.replica`; it waits for
/// its wiring (stage_wiring_msg) from `config.owner`'s node.
caf::actor spawn_stage(caf::actor_system& sys, stage_config config);

} // namespace troupe::algos
