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
  if (!b.train)
    throw std::invalid_argument("--stages and --max-params-per-actor need "
                                "the training data");
  auto layout = make_pipeline_layout(flags, o.model, b.train->sample_shape,
                                     b.train->classes, b.job.shards);
  if (!flags.on()) {
    // The budget holds for the shards too.
    const auto total = b.job.init ? b.job.init->size() : 0;
    const auto need = (total + flags.max_params - 1) / flags.max_params;
    b.job.shards = std::max<std::uint32_t>(b.job.shards,
                                           static_cast<std::uint32_t>(need));
    return;
  }
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
