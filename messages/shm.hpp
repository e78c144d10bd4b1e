// The same-host fast path for tensor payloads (issue [14]).
//
// A tensor sent to another process carries its floats inline in the BASP
// frame: serialized, through loopback TCP (and the port guard), and
// deserialized. Between processes of one host the floats can travel through
// shared memory instead, as MPI and NCCL do between local ranks:
//
//   - A writer keeps one segment per destination node (a sealed memfd: its
//     size can never change, so a reader's mapping never faults). A tensor
//     marked for that node (tensor::share_with) is copied into a block of
//     the segment when it is serialized, and the frame carries a reference:
//     the writer's pid and descriptor, the segment's random nonce, the
//     block's offset, size and generation.
//   - A reader maps a writer's segment only once it proved it is the one
//     offered: until then every tensor also travels inline, with an offer
//     (pid, descriptor, nonce); the reader opens /proc/PID/fd/FD, checks that
//     it is a sealed troupe memfd of the size its header states, with the
//     magic and the nonce of the offer, and marks the header "read". Only
//     then does the writer send references. A writer on another host (or a
//     reader without access to the writer's /proc) stays inline.
//   - A reference is resolved while the frame is deserialized: bounds,
//     generation, size and state checked against the mapping, the floats
//     copied into the tensor, the block marked free. A reference to a
//     segment this process has not proved, or that fails a check, fails the
//     deserialization (CAF drops the message). The nonce is the capability:
//     it travels only in the job's authenticated links.
//   - Nothing outlives the processes: a memfd has no name, and its memory
//     goes with the last descriptor and mapping. A reader unmaps the
//     segments of writers that are gone.
//
// Bit for bit the TCP path's result (a memcpy each way). A full segment
// falls back to inline for that tensor; nothing waits.

#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

namespace troupe::messages::shm {

/// Turns the fast path on or off for the tensors this process sends (off
/// by default; `--shm`, or TROUPE_SHM=1 in the environment, turns it on in
/// the programs). Receiving stays possible either way.
void set_enabled(bool on) noexcept;
bool enabled() noexcept;

/// A writer's segment for one destination node.
class channel;

/// The channel to `node` (created on first use), or null when the fast path
/// is off or cannot be set up here (no memfd: never tried again).
std::shared_ptr<channel> channel_to(const caf::node_id& node);

/// What a reference or an offer names on the wire.
struct segment_id {
  std::uint32_t pid = 0;
  std::uint32_t fd = 0;
  std::uint64_t nonce = 0;
};

/// A block the writer filled: where it is and its generation.
struct block_ref {
  segment_id segment;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  std::uint32_t generation = 0;
};

/// The writer's side, used by tensor serialization.
/// Whether a reader proved it maps `c` (references may be sent).
bool confirmed(const channel& c) noexcept;
/// The segment, for offers.
segment_id id_of(const channel& c) noexcept;
/// Copies `bytes` bytes from `data` into a free block of `c`; false when
/// none is free (the caller sends them inline).
bool write(channel& c, const void* data, std::uint64_t bytes, block_ref& out);

/// The reader's side, used by tensor deserialization.
/// Maps the offered segment if it checks out and marks it read; returns
/// "" or why not (an offer that fails is remembered and not retried).
std::string accept_offer(const segment_id& s);
/// Checks a reference against its segment, then copies the block's bytes
/// to out() (called only once the reference checked out: it may allocate
/// them) and frees the block; returns "" or why the reference is refused.
std::string read(const block_ref& r, const std::function<void*()>& out);

/// Counts a marked tensor sent inline.
void count_inline() noexcept;

/// Counters for benchmarks and tests (this process).
struct counters {
  std::uint64_t written = 0; ///< tensors sent through a segment
  std::uint64_t inline_ = 0; ///< marked tensors sent inline (not proved,
                             ///< or no free block)
  std::uint64_t read = 0;    ///< references resolved
  std::uint64_t refused = 0; ///< references or offers refused
  std::uint64_t bytes_written = 0, bytes_read = 0;
  std::uint64_t segments = 0; ///< segments created here
  std::uint64_t mapped = 0;   ///< writers' segments mapped now
};
counters stats() noexcept;

} // namespace troupe::messages::shm
