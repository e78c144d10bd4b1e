// EASGD's worker policy (easgd_policy.cpp): the elastic exchange with the
// center on the shards.

#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "actors/comm_policy.hpp"
#include "optim/consensus.hpp"
#include "optim/schedule.hpp"

namespace troupe::algos {

/// EASGD / EAMSGD (algorithms.md §3): every tau of its own steps the worker
/// reads the center from the shards, computes e = alpha * (x - center) from
/// its pre-step parameters, sends e to the shards (which add it to the
/// center) and moves x <- x - e; between exchanges it takes local SGD steps
/// (with Nesterov momentum delta under EAMSGD: the gradient is taken at
/// x + delta * v). `opts.alpha` must already be resolved (> 0).
/// With `schedule`, the rate of local step t is schedule.lr(t) (t counts
/// the worker's own steps) instead of opts.lr. With `replay` > 0 (hot
/// replicas) the worker keeps its last `replay` elastic pushes to each
/// shard and sends them again when the shard's handle changes (a backup
/// took over; actors::push_log).
std::unique_ptr<actors::comm_policy>
make_easgd_policy(std::vector<actors::shard_ref> shards,
                  optim::easgd_options opts, std::size_t parameters,
                  std::optional<optim::schedule_options> schedule = {},
                  std::size_t replay = 0);

} // namespace troupe::algos
