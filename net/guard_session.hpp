// The port guard's internals (guard.hpp), shared by guard.cpp (listener,
// limits, admission, log) and guard_session.cpp (one connection's relay).

#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "actors/detail/log.hpp"
#include "net/guard.hpp"
#include "net/tls_front.hpp"

namespace troupe::net {

/// BASP 0.17 operations (caf/io/basp/message_type.hpp).
namespace basp_op {
inline constexpr unsigned char server_handshake = 0;
inline constexpr unsigned char client_handshake = 1;
inline constexpr unsigned char direct_message = 2;
inline constexpr unsigned char routed_message = 3;
inline constexpr unsigned char monitor_message = 4;
} // namespace basp_op

/// "1.5 s": a duration for an error message.
std::string seconds_text(double s);

/// A big-endian 32-bit integer (BASP's byte order).
inline std::uint32_t read_be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16)
         | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

/// A big-endian 64-bit integer.
inline std::uint64_t read_be64(const unsigned char* p) {
  return (std::uint64_t{read_be32(p)} << 32) | read_be32(p + 4);
}

/// One relayed connection.
struct guard_session {
  /// The peer's stream as the relay reads it: its socket, or with TLS one
  /// end of a socketpair whose other end the TLS pump feeds.
  int client = -1;
  int server = -1;
  int tls = -1;        ///< with TLS: the peer's socket
  std::string peer;    ///< "host:port", for logs
  std::string address; ///< the source address, for the per-address limit
  std::chrono::steady_clock::time_point accepted;
  /// The client handshake's payload (the node's id), once read.
  std::string handshake;
  std::atomic<bool> admitted{false};
  /// Our actors that sent the peer a message before admission.
  std::set<std::uint64_t> callers;
  std::mutex callers_mtx;
  bool pending = true; ///< counted as not admitted (under the guard's mutex)
};

struct basp_guard::impl {
  using clock = std::chrono::steady_clock;

  int listener = -1;
  std::uint16_t port = 0, back = 0;
  guard_options opts;
  guard_counters counters;
  std::unique_ptr<tls_front> front; ///< with TLS only
  std::thread acceptor;
  std::mutex mtx;
  std::condition_variable all_gone;
  std::list<std::shared_ptr<guard_session>> live;
  std::map<std::string, std::uint32_t> pending_at; ///< per source address
  /// Node keys vouched for: their connections are admitted at handshake.
  std::set<std::string> vouched;
  std::uint32_t pending = 0, sessions = 0;
  bool stopping = false;

  // -- the log: at most opts.log_lines_per_second lines per second --

  actors::detail::limited_log refusals;

  /// Logs a refusal (a warning), unless over the rate.
  void note(const std::string& line) {
    refusals.warn("guard: " + line);
  }

  // -- admission bookkeeping (all under mtx) --

  /// The session no longer counts as not admitted.
  void leave_pending(guard_session& s);

  /// Reserves `n` bytes of the unreceived budget; false if over it.
  bool reserve(std::uint64_t n);

  /// Gives `n` reserved bytes back.
  void release(std::uint64_t n);

  // -- connections --

  int connect_back();

  void accept_loop();

  /// Relays one connection until either side is done (guard_session.cpp).
  void relay(std::shared_ptr<guard_session> s);

  /// Runs the TLS handshake of `s` and, once it succeeds, sets s.client to
  /// a socketpair end fed by the returned pump thread; logs why not, and
  /// returns no thread, if it fails (guard_tls.cpp).
  std::thread open_tls(guard_session& s);

  /// Peer to CAF, frame by frame (guard_session.cpp).
  void upstream(guard_session& s);

  /// CAF to peer: frame by frame (noting the senders) until the peer is
  /// admitted, then as it comes (guard_session.cpp).
  void downstream(guard_session& s);
};

} // namespace troupe::net
