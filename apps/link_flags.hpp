#pragma once

#include <string>

#include "apps/cli.hpp"
#include "net/system.hpp"

namespace troupe::apps {

/// The flags every process of a distributed job shares (train --listen,
/// node, launch): they must agree on all processes.
struct link_flags {
  std::string token, token_file;
  std::string tls_cert, tls_key, tls_ca;
  double heartbeat = 0.2;
  double node_timeout = 2.0;
  double join_timeout = 60;
  /// Tensors to processes on this host through shared memory.
  bool shm = true;
};

/// Binds the flags to `p`.
void add_link_options(option_parser& p, link_flags& f);

/// The checked link settings (the token file read); throws usage_error
/// naming the flag.
net::link_options link_settings(const link_flags& f,
                                const std::string& command);

/// The flags as arguments for another troupe process (launch passes them on).
std::vector<std::string> link_arguments(const link_flags& f);

} // namespace troupe::apps
