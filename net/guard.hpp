// A guard in front of a coordinator's plaintext BASP port.
//
// CAF 0.17.6 trusts the payload length in every BASP header: a peer that
// sends one header claiming 4 GiB makes the middleman allocate and zero that
// much, and the listening port stops answering (measured: a node could not
// join for the rest of the job). The guard listens on the public port, relays
// every connection to CAF's port on the loopback interface, and checks each
// frame's header on the way in: a known operation, a payload no larger than
// the limit, and a handshake first, within a deadline. A peer that breaks
// the rules is cut off, alone; CAF never sees its bytes. With TLS the guard
// is not needed (and cannot read the frames): the handshake refuses peers
// without a certificate before any BASP frame is read.

#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "net/system.hpp"

namespace troupe::net {

struct guard_options {
  /// Largest payload of one frame (a push or fetch reply of one shard's
  /// range travels as one frame).
  std::uint32_t max_payload = 1u << 30;
  /// Seconds a new connection has to send its handshake.
  double handshake_timeout = 10;
  /// Connections that have not completed their handshake, at most.
  std::uint32_t max_pending = 64;
};

/// What the guard did, for logs and the job report.
struct guard_counters {
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::uint64_t> refused{0}; ///< cut off for a bad frame
  std::atomic<std::uint64_t> timed_out{0};
  std::atomic<std::uint64_t> bytes_in{0};
};

class basp_guard {
public:
  /// Listens on `front` and relays to 127.0.0.1:`back`. Throws
  /// std::runtime_error if the front port cannot be opened.
  basp_guard(const endpoint& front, std::uint16_t back, guard_options opts);
  ~basp_guard();
  basp_guard(const basp_guard&) = delete;
  basp_guard& operator=(const basp_guard&) = delete;

  /// The front port (useful with port 0).
  std::uint16_t port() const noexcept;

  const guard_counters& counters() const noexcept;

  /// Why a BASP header would be refused ("" if acceptable). `first` marks a
  /// connection's first frame, which must be a client handshake.
  static std::string check_header(const unsigned char* header, bool first,
                                  std::uint32_t max_payload);

  /// Size of a BASP 0.17 header on the wire.
  static constexpr std::size_t header_size = 32;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace troupe::net
