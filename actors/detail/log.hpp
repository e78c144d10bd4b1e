#pragma once

#include <spdlog/logger.h>

namespace troupe::actors::detail {

/// The logger of every troupe actor, named "troupe": it writes to stderr,
/// because stdout carries results only. Level info by default; change it
/// with log().set_level(...).
spdlog::logger& log();

} // namespace troupe::actors::detail
