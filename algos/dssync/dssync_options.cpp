// DS-Sync's flags, their checks and its part of a job.

#include <algorithm>
#include <stdexcept>

#include <caf/config_option_set.hpp>

#include "actors/coordinator.hpp"
#include "algos/dssync/dssync.hpp"
#include "algos/local_steps.hpp"

namespace troupe::algos {

std::string dssync::summary() const {
  return "averaging in shuffled groups";
}

std::shared_ptr<algorithm> dssync::clone() const {
  return std::make_shared<dssync>(*this);
}

void dssync::bind(caf::config_option_set& set) {
  set.add(group_size, "?dssync", "group-size",
          "workers per averaging group (default 2)");
  mixing.bind(set, "?dssync", aggregation_flags::combining::group);
}

void dssync::check_flags(const job_options& o,
                         const std::set<std::string>& given) const {
  if (group_size < 2 || group_size > 4096)
    throw std::invalid_argument("--group-size must be in [2, 4096]");
  mixing.check(given, std::min<std::uint64_t>(group_size, o.workers),
               "group members (--group-size)");
}

void dssync::resolve(job_options& o, double model_lr) const {
  decentralized_defaults(o);
  algorithm::resolve(o, model_lr);
}

bool dssync::uses_shards(const job_options&) const {
  return false;
}

void dssync::build(job_build& b) {
  local = local_steps::of(b);
  settings.group_size = static_cast<std::uint32_t>(group_size);
  settings.seed = b.options.seed;
  settings.mix_rule = mixing.rule;
  settings.mix_options = mixing.options();
  b.job.shards = 0;
}

} // namespace troupe::algos
