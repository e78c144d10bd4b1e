#pragma once

// The network of a simulated cluster: nodes in racks, each node's NIC a
// transmit and a receive queue, each rack's uplink and downlink to an
// oversubscribed core. A message crosses the queues of its path in order
// (cut-through: a queue starts sending as soon as the previous one has
// started, and cannot finish before it), each queue sending one message at a
// time at its own rate in arrival order, so that incast, a busy NIC and a
// congested core all show (a faster queue fed by slower ones carries several
// messages at once). Times are integer nanoseconds, so that a run is exact and
// repeatable.

#include <cstdint>
#include <string>
#include <vector>

namespace troupe::sim {

using nanos = std::int64_t;

/// The network's settings.
struct network_options {
  double gbps = 10;            ///< each NIC's rate, each direction
  double latency_us = 5;       ///< per switch crossed (1 in a rack, 3 across)
  std::uint32_t rack_size = 0; ///< nodes per rack; 0: one rack
  double oversubscription = 1; ///< a rack's NIC rates over its uplink's
  std::uint32_t header_bytes = 64; ///< added to each message's payload
};

/// Checks `o`, throwing std::invalid_argument naming the setting.
void validate(const network_options& o);

class link_model {
public:
  link_model(network_options o, std::uint32_t nodes);

  /// When a message of `bytes` sent from `src` at `t` is in `dst`'s hands;
  /// reserves the queues on its path. A node sends to itself at no cost.
  nanos deliver(nanos t, std::uint32_t src, std::uint32_t dst,
                std::uint64_t bytes);

  /// Nanoseconds `bytes` take at `gbps` (rounded up).
  static nanos wire_time(std::uint64_t bytes, double gbps) noexcept;

  std::uint32_t nodes() const noexcept {
    return nodes_;
  }
  std::uint32_t rack_of(std::uint32_t node) const noexcept {
    return opts_.rack_size == 0 ? 0 : node / opts_.rack_size;
  }
  const network_options& options() const noexcept {
    return opts_;
  }
  /// Bytes sent across racks (through the core) and in all.
  std::uint64_t core_bytes() const noexcept {
    return core_bytes_;
  }
  std::uint64_t bytes() const noexcept {
    return bytes_;
  }
  /// The longest a message waited for busy queues on its path.
  nanos max_queueing() const noexcept {
    return max_queueing_;
  }

private:
  struct queue {
    nanos free_at = 0;
    double gbps = 0;
  };
  network_options opts_;
  std::uint32_t nodes_;
  std::vector<queue> tx_, rx_, up_, down_;
  nanos hop_;
  std::uint64_t core_bytes_ = 0, bytes_ = 0;
  nanos max_queueing_ = 0;
};

} // namespace troupe::sim
