// A guard in front of a coordinator's plaintext BASP port.
//
// CAF 0.17.6 trusts the payload length in every BASP header: a peer that
// sends one header claiming 1 GiB makes the middleman allocate and zero that
// much before a byte of it arrives, and any BASP peer may talk to any actor
// (the registrar, CAF's SpawnServ and ConfigServ, the node agents' proxies).
// The guard listens on the public port, relays every connection to CAF's port
// on the loopback interface and checks each frame on the way in:
//   - a connection's first frame is a client handshake of at most a few KiB,
//     complete within a deadline counted from accept;
//   - until the registrar admits the connection's node (admit()), it may send
//     only handshakes, heartbeats, and small direct messages and proxy
//     bookkeeping addressed to the registrar or to an actor that addressed
//     it first (the guard reads the frames CAF sends until then);
//   - a frame's header reaches CAF only once its payload's bytes are in hand,
//     or, for large frames, once the bytes still missing fit in a budget of
//     announced-but-not-received bytes (per connection and in total); a frame
//     whose bytes stop flowing is cut off;
//   - connections not yet admitted are limited in total and per address.
//   - no frame may carry a caf::config_value, and a streamed frame's first
//     64 KiB may not hold a nested message (messages/wire_check.hpp: CAF
//     0.17.6 ends the process on a malformed config_value);
// A peer that breaks a rule is cut off, alone, and the refusal is logged
// (rate-limited). With TLS (guard_options::tls) the guard terminates it: it
// runs the server handshake as caf::openssl would (tls_front.hpp), within the
// handshake deadline and counted as pending, logs why it refused one, and
// checks the decrypted frames like plaintext ones.

#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "net/system.hpp"

namespace troupe::net {

struct guard_options {
  /// Largest payload of one frame from an admitted node (a push or fetch
  /// reply of one shard's range travels as one frame).
  std::uint32_t max_payload = 1u << 30;
  /// Largest payload of a client handshake (CAF 0.17.6 sends 32 bytes: the
  /// node's id).
  std::uint32_t max_handshake = 4096;
  /// Largest payload of a frame from a connection not yet admitted (the join
  /// request and the setup reply carry a hello and a fingerprint).
  std::uint32_t max_unadmitted_payload = 64u << 10;
  /// Seconds from accept to a complete client handshake (an absolute
  /// deadline, not a per-receive timeout).
  double handshake_timeout = 10;
  /// Seconds from accept until the registrar admits the connection's node
  /// (joining includes setting the job up: loading the data).
  double admit_timeout = 300;
  /// Seconds a frame's bytes may stop flowing before the connection is cut.
  double frame_timeout = 30;
  /// Connections not yet admitted, at most (in total).
  std::uint32_t max_pending = 64;
  /// Connections not yet admitted from one source address, at most.
  std::uint32_t max_pending_per_address = 16;
  /// Frames up to this payload are read whole before their header is
  /// forwarded; larger ones are streamed under the budgets below.
  std::uint32_t max_buffered_payload = 1u << 20;
  /// Bytes announced by one connection's frame header and forwarded to CAF
  /// (which allocates them) but not yet received, at most.
  std::uint64_t max_unreceived_per_connection = 64ull << 20;
  /// The same, summed over all connections.
  std::uint64_t max_unreceived = 256ull << 20;
  /// The actor id of the registrar: the only actor a connection not yet
  /// admitted may address (0: none).
  std::uint64_t registrar_id = 0;
  /// Refusal lines logged per second, at most (the rest are counted and the
  /// count logged with the next line).
  std::uint32_t log_lines_per_second = 5;
  /// With TLS files set (they passed validate_tls()), peers speak TLS to the
  /// guard, which relays the decrypted bytes to CAF's plaintext port.
  tls_options tls;
};

/// What the guard did, for logs and the job report.
struct guard_counters {
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::uint64_t> refused{0}; ///< cut off for a bad frame or limit
  std::atomic<std::uint64_t> timed_out{0};
  std::atomic<std::uint64_t> dropped{0}; ///< frames not forwarded, peer kept
  std::atomic<std::uint64_t> admitted{0};
  /// TLS handshakes that did not complete (refused, timed out, abandoned).
  std::atomic<std::uint64_t> tls_failed{0};
  std::atomic<std::uint64_t> bytes_in{0};
  /// Bytes announced to CAF but not yet received, now (all connections).
  std::atomic<std::uint64_t> unreceived{0};
  /// The largest value `unreceived` reached.
  std::atomic<std::uint64_t> unreceived_peak{0};
};

/// What the guard does with one frame.
enum class frame_action { forward, drop, refuse };

/// The guard's verdict on one frame and, unless forwarded, why.
struct frame_verdict {
  frame_action action = frame_action::forward;
  std::string reason;
};

/// What a connection may send next.
struct frame_rules {
  bool first = false;    ///< the connection's first frame
  bool admitted = false; ///< the registrar admitted its node
  /// Actors on this side that sent the peer a message (it may answer them
  /// before admission: CAF's own helpers query a new node).
  const std::set<std::uint64_t>* callers = nullptr;
};

class basp_guard {
public:
  /// Listens on `front` and relays to 127.0.0.1:`back`. Throws
  /// std::runtime_error if the front port cannot be opened or the TLS files
  /// cannot be loaded.
  basp_guard(const endpoint& front, std::uint16_t back, guard_options opts);
  ~basp_guard();
  basp_guard(const basp_guard&) = delete;
  basp_guard& operator=(const basp_guard&) = delete;

  /// The front port (useful with port 0).
  std::uint16_t port() const noexcept;

  const guard_counters& counters() const noexcept;

  /// Admits the connections whose client handshake carries `node_key` (the
  /// bytes a caf::binary_serializer writes for the node's caf::node_id):
  /// from now on they may send any valid frame. Thread-safe.
  void admit(const std::string& node_key);

  /// Admits the connections whose client handshake carries `node_key`, now
  /// and from now on (a node's peer port: its door vouches for a member
  /// before that member connects, net/peer_link.hpp). Thread-safe.
  void vouch(const std::string& node_key);

  /// Why a BASP header would be refused ("" if acceptable). `first` marks a
  /// connection's first frame, which must be a client handshake.
  static std::string check_header(const unsigned char* header, bool first,
                                  std::uint32_t max_payload);

  /// The verdict on a frame with this header under `rules` and `opts`.
  static frame_verdict check_frame(const unsigned char* header,
                                   const frame_rules& rules,
                                   const guard_options& opts);

  /// Size of a BASP 0.17 header on the wire.
  static constexpr std::size_t header_size = 32;

  struct impl;

private:
  std::unique_ptr<impl> impl_;
};

} // namespace troupe::net
