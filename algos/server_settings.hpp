// What the parameter-server algorithms (Downpour, sync) share: the check of
// their --server-optimizer.

#pragma once

#include <cstdint>
#include <string>

namespace troupe::algos {

/// Throws std::invalid_argument naming `flag` if `name` is not empty and
/// not an optimizer.
void check_server_optimizer(const std::string& name,
                            const std::string& flag = "--server-optimizer");

/// The default rate of an asynchronous parameter server's plain SGD
/// relative to the model's, with `workers` workers pushing (Downpour's
/// shards, Gaia's group servers): min(4, 8 / workers).
double async_server_lr_factor(std::uint64_t workers);

} // namespace troupe::algos
