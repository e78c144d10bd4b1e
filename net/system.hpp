// The actor system of a process that takes part in a distributed job: the
// coordinator's and every node's are configured by the same function, so the
// settings that must match on both ends of a link (heartbeats, TLS) do.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <caf/actor_system_config.hpp>

#include "net/tls.hpp"

namespace troupe::net {

/// HOST:PORT of a listening coordinator.
struct endpoint {
  std::string host;
  std::uint16_t port = 0;
};

/// Parses "HOST:PORT" (PORT 0 to 65535; [v6]:PORT accepted). Throws
/// std::invalid_argument naming the flag and the text.
endpoint parse_endpoint(const std::string& text, const std::string& flag);

/// What every link of a job shares.
struct link_options {
  /// Middleman heartbeat interval: a peer that sends nothing for
  /// `node_timeout` seconds is declared dead, hung (SIGSTOP) ones included.
  double heartbeat = 0.2;
  double node_timeout = 2.0;
  tls_options tls;
  /// The job's join token (empty: none).
  std::string token;
  /// Tensors to processes on this host through shared memory
  /// (messages/shm.hpp); configure() sets it for the process (TROUPE_SHM=0
  /// or 1 in the environment overrides it: the tests' switch).
  bool shm = true;

  std::uint64_t heartbeat_ms() const;
  std::uint64_t timeout_ms() const;
};

/// Checks the options: timeouts positive and ordered, TLS usable. Throws
/// std::invalid_argument with the reason.
void validate(const link_options& opts);

/// Fills a config: message types, the sharing scheduler with `threads`
/// threads (0: one per core, at least 2), the middleman with heartbeats, and
/// TLS when configured. Call validate() first.
void configure(caf::actor_system_config& cfg, const link_options& opts,
               std::size_t threads);

/// A config made by configure(), for the coordinator's and the nodes'
/// actor systems.
struct link_config : caf::actor_system_config {
  link_config(const link_options& opts, std::size_t threads) {
    configure(*this, opts, threads);
  }
};

/// Reads a token file (first line, surrounding whitespace trimmed). Throws
/// std::invalid_argument if it cannot be read or is empty.
std::string read_token_file(const std::string& path);

/// Compares two tokens in time independent of where they differ.
bool tokens_equal(const std::string& x, const std::string& y);

/// "host:pid" of this process, the name a node goes by.
std::string process_name();

} // namespace troupe::net
