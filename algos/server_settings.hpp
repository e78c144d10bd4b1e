// What the parameter-server algorithms (Downpour, sync) share: the check of
// their --server-optimizer.

#pragma once

#include <string>

namespace troupe::algos {

/// Throws std::invalid_argument naming `flag` if `name` is not empty and
/// not an optimizer.
void check_server_optimizer(const std::string& name,
                            const std::string& flag = "--server-optimizer");

} // namespace troupe::algos
