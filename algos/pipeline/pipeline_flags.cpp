#include "algos/pipeline/pipeline_flags.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include <caf/config_option_set.hpp>

namespace troupe::algos {

void pipeline_flags::bind(caf::config_option_set& set,
                          caf::string_view category) {
  set.add(stages, category, "stages",
          "cut each replica into S stages, each an actor with only its own "
          "layers' parameters (default 1: no cut)")
      .add(micro_batches, category, "micro-batches",
           "with --stages: micro-batches a batch is split into (default 4)")
      .add(schedule, category, "pipeline",
           "with --stages: gpipe (default; one update per batch) | 1f1b "
           "(an update per micro-batch)")
      .add(cut, category, "cut",
           "with --stages: the layers that begin stages 2..S, e.g. "
           "relu1,dense3 (default: balance the estimated compute)")
      .add(weight_stashing, category, "weight-stashing",
           "with --pipeline=1f1b: a micro-batch's backward uses the weights "
           "its forward saw (default true)")
      .add(max_params, category, "max-params-per-actor",
           "refuse a layout where a worker, stage or shard would hold more "
           "parameters (default 0: no limit)");
}

void pipeline_flags::check(const job_options& o,
                           const std::set<std::string>& given,
                           const std::vector<std::string>& unsupported) const {
  auto fail
      = [](const std::string& what) { throw std::invalid_argument(what); };
  if (stages < 1 || stages > 64)
    fail("--stages must be from 1 to 64");
  if (micro_batches < 1 || micro_batches > 1024)
    fail("--micro-batches must be from 1 to 1024");
  parsed_schedule(); // throws naming the schedules
  if (!on()) {
    for (const char* flag :
         {"micro-batches", "pipeline", "cut", "weight-stashing"})
      if (given.count(flag) > 0)
        fail(std::string{"--"} + flag + " applies with --stages=2 or more");
    return;
  }
  if (micro_batches > o.batch)
    fail("--micro-batches=" + std::to_string(micro_batches)
         + " is more than --batch=" + std::to_string(o.batch)
         + ": every micro-batch needs a sample");
  if (given.count("weight-stashing") > 0
      && parsed_schedule() != optim::pipeline_schedule::one_f_one_b)
    fail("--weight-stashing applies with --pipeline=1f1b (GPipe's weights "
         "do not change within a batch)");
  for (const auto& flag : unsupported)
    if (given.count(flag) > 0)
      fail("--" + flag
           + " does not combine with --stages (a pipeline's "
             "stages fetch and push every step)");
}

namespace {

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in{text};
  std::string name;
  while (std::getline(in, name, ','))
    if (!name.empty())
      out.push_back(name);
  return out;
}

} // namespace

pipeline_layout make_pipeline_layout(const pipeline_flags& flags,
                                     const std::string& model,
                                     optim::shape input, int classes,
                                     std::size_t shards) {
  pipeline_layout out;
  out.layers = optim::profile_layers(model, input, classes, 0);
  std::size_t total = 0;
  for (const auto& l : out.layers)
    total += l.params;
  const auto names = split_names(flags.cut);
  if (!flags.cut.empty() && names.size() + 1 != flags.stages)
    throw std::invalid_argument("--cut names " + std::to_string(names.size())
                                + " layers; --stages="
                                + std::to_string(flags.stages) + " needs "
                                + std::to_string(flags.stages - 1));
  out.stages
      = names.empty()
            ? optim::cut_balanced(out.layers, flags.stages, flags.max_params)
            : optim::cut_at(out.layers, names, flags.max_params);
  // Shards by the stages' parameters: at least one where there are any,
  // more where a shard would pass the budget.
  for (const auto& s : out.stages) {
    out.first_shard.push_back(out.shards.size());
    if (s.param_size == 0)
      continue;
    auto k = static_cast<std::size_t>(std::llround(
        static_cast<double>(shards) * static_cast<double>(s.param_size)
        / static_cast<double>(std::max<std::size_t>(total, 1))));
    k = std::clamp<std::size_t>(k, 1, s.param_size);
    if (flags.max_params > 0)
      k = std::max<std::size_t>(k, (s.param_size + flags.max_params - 1)
                                       / flags.max_params);
    for (const auto& part : optim::balanced_split(s.param_size, k))
      out.shards.push_back({s.param_offset + part.offset, part.size});
  }
  out.first_shard.push_back(out.shards.size());
  return out;
}

} // namespace troupe::algos
