#pragma once

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>

#include "messages/control.hpp"
#include "messages/messages.hpp"

// The message of all-reduce SGD (algorithms.md "All-reduce SGD"): one chunk
// of a step's gradient passed to the sender's successor on the ring of
// workers, first while the chunks are summed (reduce-scatter), then while
// the summed chunks go round (all-gather).

namespace troupe::messages {

// -- ring_chunk_msg -----------------------------------------------------------

/// The phases of a ring all-reduce, in order.
enum class ring_phase : std::uint8_t {
  reduce_scatter = 0, ///< `values` is a partial sum: the receiver adds its own
  all_gather = 1,     ///< `values` is the whole sum: the receiver keeps it
};

/// Worker `sender`'s hop `hop` (0 .. workers - 2) of phase `phase` of step
/// `step`'s all-reduce: chunk `chunk` of the gradient vector (of W chunks),
/// its values summed over `samples` examples, each worker's mean gradient
/// weighed by its examples. `pause_at` (0: none) is the step after which
/// every worker pauses for a checkpoint, as far as the sender knows: the
/// workers agree on it through the ring (algos/allreduce/allreduce_policy.cpp).
struct ring_chunk_msg {
  worker_id sender = 0;
  std::uint64_t step = 0;
  std::uint8_t phase = 0; ///< a ring_phase
  std::uint32_t hop = 0;
  std::uint32_t chunk = 0;
  std::uint64_t samples = 0;
  tensor values;
  std::uint64_t pause_at = 0;
};

/// Serializes or prints a ring_chunk_msg.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ring_chunk_msg& x) {
  return f(caf::meta::type_name("ring_chunk_msg"), x.sender, x.step, x.phase,
           x.hop, x.chunk, x.samples, x.values, x.pause_at);
}

/// One line for logs (the header and the number of values).
std::string to_string(const ring_chunk_msg& x);

/// Bytes on the wire (payload included), for the counters.
std::uint64_t wire_size(const ring_chunk_msg& x);

/// The bytes of a ring_chunk_msg besides its 4 bytes per value.
inline constexpr std::uint64_t ring_chunk_header_bytes
    = 4 + 8 + 1 + 4 + 4 + 8 + 8 + 8;

} // namespace troupe::messages
