#pragma once

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>

#include "messages/control.hpp"
#include "messages/messages.hpp"

// A compressed gradient push (algorithms.md §8, §9): the fields of a
// push_msg with the values replaced by a packed block (optim/compress.hpp:
// indices as varint deltas, signs as bits, quantized or exact values). The
// shard decodes it and applies it as the dense push it stands for.

namespace troupe::messages {

/// A worker's compressed gradient for [offset, offset + size).
struct compressed_push_msg {
  worker_id worker = 0;
  std::uint64_t seq = 0;
  std::uint64_t version = 0;
  std::uint64_t offset = 0;
  std::uint64_t clock = 0;
  std::uint32_t samples = 0;
  /// Coordinates the block decodes to.
  std::uint64_t size = 0;
  /// The packed block (raw bytes on the wire).
  std::string packed;
};

/// Serializes or prints a compressed_push_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, compressed_push_msg& x) {
  return f(caf::meta::type_name("compressed_push_msg"), x.worker, x.seq,
           x.version, x.offset, x.clock, x.samples, x.size, x.packed);
}

/// SGP with compression: the change of the sender's public copy for this
/// receiver (its model as the receiver knows it), packed; the receiver adds
/// it to its copy and mixes fraction * copy into x, and the weight part
/// (sent exactly) into w.
struct compressed_gossip_msg {
  worker_id sender = 0;
  std::uint64_t iteration = 0;
  double weight = 0;
  double fraction = 0;
  std::uint64_t size = 0;
  std::string packed;
};

/// Serializes or prints a compressed_gossip_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f,
                                        compressed_gossip_msg& x) {
  return f(caf::meta::type_name("compressed_gossip_msg"), x.sender, x.iteration,
           as_bits(x.weight), as_bits(x.fraction), x.size, x.packed);
}

/// One line for logs (the block's length, not its bytes).
std::string to_string(const compressed_push_msg& x);
std::string to_string(const compressed_gossip_msg& x);

/// Bytes on the wire: the header fields and the packed block.
std::uint64_t wire_size(const compressed_push_msg& x);
std::uint64_t wire_size(const compressed_gossip_msg& x);

} // namespace troupe::messages
