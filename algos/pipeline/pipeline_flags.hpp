// Model parallelism's flags (algorithms.md "Pipeline"): a replica cut into
// --stages consecutive stages, each an actor that fetches from and pushes to
// only the shards holding its own slice of the parameters (DistBelief's
// layout), fed --micro-batches at a time under GPipe or 1F1B. The
// data-parallel algorithm that hosts them (Downpour) binds these flags and
// hands its workers, shards and run to algos/pipeline when --stages > 1.

#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/string_view.hpp>

#include "algos/job_options.hpp"
#include "optim/pipeline.hpp"
#include "optim/pipeline_stage.hpp"
#include "optim/range_table.hpp"

namespace troupe::algos {

struct pipeline_flags {
  std::uint64_t stages = 1; ///< stages per replica (1: no pipeline)
  std::uint64_t micro_batches = 4;
  std::string schedule = "gpipe"; ///< gpipe | 1f1b
  std::string cut;                ///< "relu1,dense3": where stages start
  bool weight_stashing = true;    ///< 1F1B: backward on the forward's weights
  std::uint64_t max_params = 0;   ///< per actor (0: no limit)

  /// Binds the flags under `category` ("?downpour").
  void bind(caf::config_option_set& set, caf::string_view category);

  /// Throws std::invalid_argument naming the flag: a value out of range, a
  /// pipeline flag without --stages, or `unsupported` (flags of the host
  /// algorithm a pipeline does not take) given with --stages.
  void check(const job_options& o, const std::set<std::string>& given,
             const std::vector<std::string>& unsupported) const;

  bool on() const noexcept {
    return stages > 1;
  }

  optim::pipeline_schedule parsed_schedule() const {
    return optim::parse_pipeline_schedule(schedule);
  }
};

/// A pipeline as built for a job: the cut and the shards' layout.
struct pipeline_layout {
  std::vector<optim::layer_profile> layers;
  std::vector<optim::stage_plan> stages;
  /// The shards' ranges, none crossing a stage's slice; stage s holds
  /// shards [first_shard[s], first_shard[s + 1]).
  std::vector<optim::slice> shards;
  std::vector<std::size_t> first_shard;
};

/// Cuts `model` (for samples of `input` and `classes` classes) into
/// `flags.stages` stages as `flags` say, with `shards` shards spread over the
/// stages by their parameters (at least one per stage that has any; more where
/// --max-params-per-actor needs them). Deterministic: every node cuts alike.
/// Throws std::invalid_argument naming the problem.
pipeline_layout make_pipeline_layout(const pipeline_flags& flags,
                                     const std::string& model,
                                     optim::shape input, int classes,
                                     std::size_t shards);

} // namespace troupe::algos
