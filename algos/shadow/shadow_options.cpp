// ShadowSync's flags, their checks and its part of a job.

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <caf/config_option_set.hpp>

#include "actors/coordinator.hpp"
#include "algos/local_steps.hpp"
#include "algos/lsgd/leader_board.hpp"
#include "algos/shadow/shadow.hpp"

namespace troupe::algos {

std::string shadow::summary() const {
  return "background synchronization while the workers never wait";
}

std::shared_ptr<algorithm> shadow::clone() const {
  return std::make_shared<shadow>(*this);
}

void shadow::bind(caf::config_option_set& set) {
  caf::string_view g = "?shadow";
  set.add(mode, g, "shadow",
          "the background synchronization, easgd | ma | bmuf (default ma)")
      .add(period, g, "shadow-period",
           "seconds between two synchronization rounds (default 0: back to "
           "back)")
      .add(alpha, g, "alpha",
           "--shadow=easgd: moving rate alpha (default 0.9 / workers)")
      .add(block_momentum, g, "block-momentum",
           "--shadow=bmuf: block momentum (default 1 - 1 / workers)")
      .add(block_lr, g, "block-lr",
           "--shadow=bmuf: block learning rate (default 1)")
      .add(groups, g, "groups",
           "syncers, each over a block of workers (default: one per node in "
           "a distributed job, else 1)");
}

void shadow::check_flags(const job_options& o,
                         const std::set<std::string>& given) const {
  auto fail
      = [](const std::string& what) { throw std::invalid_argument(what); };
  if (mode != "easgd" && mode != "ma" && mode != "bmuf")
    fail("--shadow must be easgd, ma or bmuf");
  if (given.count("alpha") && mode != "easgd")
    fail("--alpha applies to --shadow=easgd");
  if (!(alpha >= 0 && alpha < 1))
    fail("--alpha must be in [0, 1) (0: 0.9 / workers)");
  if (!(period >= 0 && period <= 3600))
    fail("--shadow-period must be in [0, 3600] seconds");
  if ((given.count("block-momentum") || given.count("block-lr"))
      && mode != "bmuf")
    fail("--block-momentum and --block-lr apply to --shadow=bmuf");
  if (block_momentum != -1 && !(block_momentum >= 0 && block_momentum < 1))
    fail("--block-momentum must be in [0, 1)");
  if (!(block_lr > 0 && block_lr <= 10))
    fail("--block-lr must be in (0, 10]");
  if (groups > o.workers)
    fail("--groups must be at most --workers");
}

void shadow::resolve(job_options& o, double model_lr) const {
  decentralized_defaults(o);
  algorithm::resolve(o, model_lr);
}

bool shadow::uses_shards(const job_options&) const {
  return mode == "easgd"; // S-EASGD's center
}

void shadow::build(job_build& b) {
  auto& job = b.job;
  local = local_steps::of(b);
  settings.mode = mode;
  settings.alpha = alpha;
  settings.block_momentum = block_momentum;
  settings.block_lr = block_lr;
  settings.period = std::chrono::milliseconds{
      static_cast<std::int64_t>(std::llround(period * 1000))};
  // One syncer per node (this process is one node), or --groups syncers
  // over contiguous blocks of workers. (One per worker makes model
  // averaging an all-to-all among n syncers every round: on mlp with 8
  // workers it sent as many bytes per sample as sync.)
  group_of.clear();
  if (groups > 0)
    group_of = lsgd_groups(job.workers, static_cast<std::uint32_t>(groups), {});
  if (mode != "easgd")
    job.shards = 0;
}

} // namespace troupe::algos
