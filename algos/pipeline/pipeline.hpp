// Model parallelism for a data-parallel algorithm (algorithms.md
// "Pipeline"): the host algorithm (Downpour) builds a pipeline_job when
// --stages > 1 and hands it its workers (each becomes a replica's head), its
// shards' layout, its run (which spawns, wires and rebuilds the stages) and
// the stage role.

#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actors/algorithm.hpp"
#include "actors/comm_policy.hpp"
#include "algos/algorithm.hpp"
#include "algos/pipeline/pipeline_flags.hpp"
#include "algos/pipeline/stage_actor.hpp"

namespace troupe::actors {
class role_registry;
struct worker_config;
} // namespace troupe::actors

namespace troupe::algos {

/// A pipeline as a job runs it: the flags, the cut and the shards' layout,
/// and what a stage needs to build its layers.
struct pipeline_job {
  pipeline_flags flags;
  pipeline_layout layout;
  std::string model;
  optim::shape input;
  int classes = 0;
  std::uint32_t batch = 1;
  std::uint64_t seed = 0;
};

/// An algorithm that can run its replicas as pipelines.
class pipeline_host {
public:
  virtual ~pipeline_host() = default;

  /// The job's pipeline; null when the replicas are not cut.
  virtual const pipeline_job* pipeline() const noexcept = 0;
};

/// The part of a host algorithm (Downpour, sync) that runs its replicas as
/// pipelines: the flags, and the pipeline its build() makes of them. The
/// host binds and checks the flags and, where pipeline() is set, hands over
/// its workers (configure_head), shard layout (layout.shards), run
/// (make_pipeline_run) and roles (add_pipeline_roles).
class pipeline_hosting : public pipeline_host {
public:
  /// --stages, --micro-batches, --pipeline, --cut, --weight-stashing,
  /// --max-params-per-actor.
  pipeline_flags pipeline_settings;

  const pipeline_job* pipeline() const noexcept override {
    return pipeline_.get();
  }

protected:
  /// build()'s part. With --stages: the cut and the shards' layout (the
  /// job's shard count follows it), and under 1F1B the shards' rate
  /// schedule counted in micro-batch pushes. With --max-params-per-actor
  /// alone: the whole model checked against it, and the shards made small
  /// enough. Throws std::invalid_argument naming the problem.
  void build_pipeline(job_build& b);

  std::shared_ptr<const pipeline_job> pipeline_;
};

/// Stage `s` of replica `r`: its layers, its shards (of `shards`, the
/// job's, those inside its slice) and the job's settings.
stage_config stage_config_of(const actors::job_config& job,
                             const pipeline_job& p, messages::worker_id r,
                             std::uint32_t s,
                             const std::vector<actors::shard_ref>& shards);

/// Makes worker `config.id` the head of its replica: a replica over the
/// worker's batches without a model, and the head's policy. Throws
/// std::invalid_argument if the job's data is not in memory.
void configure_head(const actors::job_config& job, const pipeline_job& p,
                    actors::worker_config& config);

/// The coordinator's part: spawns every replica's stages (next to its head,
/// then round the nodes), wires them, and rebuilds a lost stage on a node
/// that answers (the replica's step starts again) or gives the replica up.
std::unique_ptr<actors::algorithm_run> make_pipeline_run(const pipeline_job& p);

/// The "pipeline_stage" role (replica, stage, the job's shard handles);
/// registered once, whichever host asks first.
void add_pipeline_roles(actors::role_registry& roles);

} // namespace troupe::algos
