// The port guard's TLS termination (guard.hpp): the server side of the TLS
// handshake that caf::openssl 0.17.6 would run, done with OpenSSL directly so
// that a refused handshake has a reason to log, and a pump that carries the
// decrypted bytes to a plaintext socket the guard's relay checks frame by
// frame.
//
// The context is set up exactly like caf::openssl's (TLS_method, the
// certificate chain, the key, the CA file, SSL_VERIFY_PEER |
// SSL_VERIFY_FAIL_IF_NO_PEER_CERT, ciphers "HIGH:!aNULL:!MD5"), so nodes that
// connect with caf::openssl::remote_actor, and their port probes
// (tls_probe.hpp), see no difference.

#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "net/tls.hpp"

namespace troupe::net {

class tls_connection;

/// How a server handshake ended.
struct tls_accept_result {
  /// The connection, when the handshake succeeded.
  std::unique_ptr<tls_connection> conn;
  /// Why not, for the log, in words ("the peer sent no certificate").
  std::string why;
  /// We refused the peer (else it gave up, closed or was too slow).
  bool refused = false;
  /// The deadline passed first.
  bool timed_out = false;
};

/// The TLS server of the coordinator's port.
class tls_front {
public:
  /// Loads the files of `opts` (which passed validate_tls()). Throws
  /// std::runtime_error naming the file and OpenSSL's reason.
  explicit tls_front(const tls_options& opts);
  ~tls_front();
  tls_front(const tls_front&) = delete;
  tls_front& operator=(const tls_front&) = delete;

  /// Runs the server handshake on the connected socket `fd` until
  /// `deadline`. Bytes that cannot start a TLS handshake (a plaintext BASP
  /// header, an HTTP request) are refused before OpenSSL sees them. `fd`
  /// stays the caller's (non-blocking from now on); a refused peer has been
  /// sent OpenSSL's alert, and its socket shut down for writing. Thread-safe.
  tls_accept_result
  accept(int fd, std::chrono::steady_clock::time_point deadline) const;

  struct impl;

private:
  std::unique_ptr<impl> impl_;
};

/// One TLS connection that completed its handshake. Not thread-safe: an
/// OpenSSL connection must not be read and written from two threads, so one
/// thread pumps both directions.
class tls_connection {
public:
  ~tls_connection();
  tls_connection(const tls_connection&) = delete;
  tls_connection& operator=(const tls_connection&) = delete;

  /// Relays between this connection and the plaintext stream socket `plain`
  /// (one end of a socketpair) until either side ends: decrypted bytes go to
  /// `plain`, bytes from `plain` are encrypted to the peer. When the peer
  /// ends, `plain` is shut down for writing; when `plain` ends, the peer gets
  /// a close_notify. Returns "" for an orderly end, else OpenSSL's reason.
  std::string pump(int plain);

  struct impl;
  explicit tls_connection(std::unique_ptr<impl> p);

private:
  std::unique_ptr<impl> impl_;
};

} // namespace troupe::net
