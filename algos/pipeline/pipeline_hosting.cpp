// A host algorithm's pipeline, built from its flags (pipeline.hpp).

#include <algorithm>
#include <stdexcept>

#include "actors/coordinator.hpp"
#include "algos/pipeline/pipeline.hpp"

namespace troupe::algos {

void pipeline_hosting::build_pipeline(job_build& b) {
  const auto& o = b.options;
  const auto& flags = pipeline_settings;
  if (!flags.on() && flags.max_params == 0)
    return;
  if (!flags.on()) {
    // A worker holds the whole model (and a shard at most all of it).
    const auto total = b.job.init ? b.job.init->size() : 0;
    if (total > flags.max_params)
      throw std::invalid_argument(
          "the model has " + std::to_string(total)
          + " parameters, more than --max-params-per-actor="
          + std::to_string(flags.max_params)
          + ", and a worker holds all of them; cut it with --stages");
    return;
  }
  if (!b.train)
    throw std::invalid_argument("--stages needs the training data");
  auto layout = make_pipeline_layout(flags, o.model, b.train->sample_shape,
                                     b.train->classes, b.job.shards);
  auto p = std::make_shared<pipeline_job>();
  p->flags = flags;
  p->model = o.model;
  p->input = b.train->sample_shape;
  p->classes = b.train->classes;
  p->batch = static_cast<std::uint32_t>(o.batch);
  p->seed = o.seed;
  b.job.shards = static_cast<std::uint32_t>(layout.shards.size());
  // 1F1B pushes every micro-batch: the shards' schedule (in updates) runs
  // M times as many per epoch.
  if (flags.parsed_schedule() == optim::pipeline_schedule::one_f_one_b)
    b.job.server.lr_schedule = b.server_schedule(
        static_cast<double>(b.batches * flags.micro_batches));
  p->layout = std::move(layout);
  pipeline_ = std::move(p);
}

} // namespace troupe::algos
