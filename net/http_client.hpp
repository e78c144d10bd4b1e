// A minimal blocking HTTP/1.1 GET client on Boost.Beast with a deadline, for
// `troupe top` and tests of the monitoring endpoint.

#pragma once

#include <chrono>
#include <string>

#include "net/system.hpp"

namespace troupe::net {

struct http_reply {
  unsigned status = 0;
  std::string body;
};

/// GETs `path` from `at`, with `Authorization: Bearer token` when the token
/// is not empty. Throws std::runtime_error naming the address if it cannot
/// connect, or the whole exchange takes longer than `timeout`.
http_reply http_get(const endpoint& at, const std::string& path,
                    const std::string& token = "",
                    std::chrono::milliseconds timeout
                    = std::chrono::seconds{5});

} // namespace troupe::net
