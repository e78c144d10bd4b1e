// A node's look at the coordinator's port before CAF connects to it.
//
// caf::openssl 0.17.6 reports a failed TLS handshake only as
// disconnect_during_handshake (its session drops OpenSSL's reason), and a
// plaintext node facing a TLS coordinator just waits. So a node first opens
// one connection of its own: a plaintext coordinator speaks first (its BASP
// server handshake), a TLS one waits for a ClientHello; with TLS the probe
// then runs the handshake CAF would run, with the same files and settings,
// and reads OpenSSL's reason when it fails.

#pragma once

#include <string>

#include "net/system.hpp"

namespace troupe::net {

/// What a probe found out.
struct probe_result {
  enum verdict_type {
    /// Nothing against connecting (or nothing certain): let CAF try.
    go,
    /// The port did not answer (not listening yet?): retry later.
    retry,
    /// Cannot succeed on retry (wrong CA, TLS against plaintext or the
    /// reverse): give up with `message`.
    refused,
  };
  verdict_type verdict = go;
  std::string message; ///< why, for the user (empty for a clean go)
};

/// Connects to `where` and checks that both ends speak the same protocol
/// and, with TLS, that the handshake succeeds both ways, spending at most
/// `seconds` (a few are enough). `tls` must have passed validate_tls().
probe_result probe_coordinator(const endpoint& where, const tls_options& tls,
                               double seconds = 5);

} // namespace troupe::net
