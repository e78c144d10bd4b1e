// TLS for the middleman through caf::openssl: option checking and loading.
//
// CAF 0.17.6 does not check its openssl.* options up front: without a
// certificate it silently falls back to an anonymous, unauthenticated cipher,
// and a client with a CA but no certificate crashes. So every TLS setup goes
// through validate_tls() first, which turns each unusable combination into a
// std::invalid_argument naming the file and the problem.

#pragma once

#include <string>

#include <caf/fwd.hpp>

namespace troupe::net {

/// Paths of the PEM files that authenticate this node. All three or none.
struct tls_options {
  std::string cert; ///< this node's certificate (may be followed by a chain)
  std::string key;  ///< its private key, unencrypted
  std::string ca;   ///< the CA certificate(s) that sign every node

  /// True when any of the three is set: TLS is wanted (and validate_tls()
  /// then insists on all three), so a partial set is never silently ignored.
  bool enabled() const {
    return !cert.empty() || !key.empty() || !ca.empty();
  }
};

/// Checks the options for use by caf::openssl and throws
/// std::invalid_argument with a message naming the file and the problem when
/// they are unusable: only some of the three given; a file missing or
/// unreadable; cert not a PEM certificate; key not a PEM private key, or
/// encrypted; key not matching cert; CA not parseable; cert not issued by the
/// CA; cert (or the CA) expired or not yet valid. Does nothing when
/// !opts.enabled().
void validate_tls(const tls_options& opts);

/// Loads caf::openssl::manager into cfg and sets openssl.certificate, .key
/// and .cafile. Call validate_tls() first, and call this after
/// cfg.load<caf::io::middleman>(): CAF creates modules in load order and the
/// OpenSSL manager refuses to start without a middleman. Does nothing when
/// !opts.enabled(). Both ends of every connection need TLS: CAF's TLS and
/// plaintext endpoints cannot talk to each other.
void apply_tls(caf::actor_system_config& cfg, const tls_options& opts);

} // namespace troupe::net
