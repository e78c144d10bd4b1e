// SGP's flags, their checks and its part of a job.

#include <stdexcept>

#include <caf/config_option_set.hpp>

#include "actors/coordinator.hpp"
#include "algos/aggregation_flags.hpp"
#include "algos/local_steps.hpp"
#include "algos/sgp/sgp.hpp"

namespace troupe::algos {

std::string sgp::summary() const {
  return "push-sum gossip between the workers";
}

std::shared_ptr<algorithm> sgp::clone() const {
  return std::make_shared<sgp>(*this);
}

void sgp::bind(caf::config_option_set& set) {
  caf::string_view g = "?sgp";
  set.add(peers, g, "peers",
          "out-peers per step on the exponential graph, 1 or 2 (default 1)")
      .add(overlap, g, "overlap",
           "overlap SGP; a step waits only for in-peer shares more than N "
           "steps old (default 0: every step's)")
      .add(gossip_gamma, g, "gossip-gamma",
           "with --compress: consensus step in (0, 1]; each step moves gamma "
           "/ (peers + 1) of the model's public copy (default 0.5; topk: "
           "0.2)");
  compression_settings.bind(set, g, "the shares");
  mixing.bind(set, g, aggregation_flags::combining::shares);
}

void sgp::check_flags(const job_options&,
                      const std::set<std::string>& given) const {
  auto fail
      = [](const std::string& what) { throw std::invalid_argument(what); };
  if (peers != 1 && peers != 2)
    fail("--peers must be 1 or 2");
  if (overlap > 1000000)
    fail("--overlap must be at most 1000000");
  compression_settings.check(given);
  if (given.count("gossip-gamma") && compression_settings.compress == "none")
    fail("--gossip-gamma applies to sgp with --compress");
  if (!(gossip_gamma > 0 && gossip_gamma <= 1))
    fail("--gossip-gamma must be in (0, 1]");
  if (mixing.rule != "mean" && mixing.rule != "cclip")
    fail("--aggregation=" + mixing.rule
         + ": sgp mixes one share at a time; its robust mixing is cclip "
           "(the other rules need a group: --algo=dssync)");
  mixing.check(given, 2, "shares");
  if (mixing.rule == "cclip" && compression_settings.compress != "none")
    fail("--aggregation=cclip and --compress do not combine in sgp (a "
         "compressed share is a change to a copy, not a model to clip)");
}

void sgp::resolve(job_options& o, double model_lr) const {
  decentralized_defaults(o);
  algorithm::resolve(o, model_lr);
}

bool sgp::uses_shards(const job_options&) const {
  return false;
}

void sgp::build(job_build& b) {
  local = local_steps::of(b);
  settings.peers = static_cast<std::uint32_t>(peers);
  settings.overlap = overlap;
  settings.seed = b.options.seed;
  settings.compress = compression_settings.options();
  settings.layers = b.layers;
  settings.gamma = gossip_gamma;
  settings.mix_rule = mixing.rule;
  settings.mix_options = mixing.options();
  b.job.shards = 0;
}

} // namespace troupe::algos
