// The same-host fast path for tensor payloads (issue [14]).
//
// A tensor sent to another process carries its floats inline in the BASP
// frame: serialized, through loopback TCP (and the port guard), and
// deserialized. Between processes of one host the floats can travel through
// shared memory instead, as MPI and NCCL do between local ranks:
//
//   - A writer keeps one segment per destination node (a sealed memfd: its
//     size can never change, so a reader's mapping never faults). A tensor
//     for that node is copied straight into a block of the segment when it
//     is made (tensor::shared_copy: the sender's one copy; the tensor views
//     the block and holds it until it is gone), or when it is serialized
//     (a tensor marked with tensor::share_with), and the frame carries a
//     reference: the writer's pid and descriptor, the segment's random
//     nonce, the block's offset, size and generation. A block is sent by
//     reference once; a tensor sent again is copied to a new block.
//   - A reader maps a writer's segment only once it proved it is the one
//     offered: until then every tensor also travels inline, with an offer
//     (pid, descriptor, nonce); the reader opens /proc/PID/fd/FD, checks that
//     it is a sealed troupe memfd of the size its header states, with the
//     magic and the nonce of the offer, and marks the header "read". Only
//     then does the writer send references. A writer on another host (or a
//     reader without access to the writer's /proc) stays inline.
//   - A reference is resolved while the frame is deserialized: bounds,
//     generation, size and state checked against the mapping, and the block
//     taken (a second reference to it is refused). A params_msg's tensor
//     stays a view of the block until its receiver copies it out (the
//     receiver's one copy, into the model); any other tensor is copied into
//     its own memory at once. The block is freed for the writer when the
//     last view of it goes. A reference to a segment this process has not
//     proved, or that fails a check, fails the deserialization (CAF drops
//     the message). The nonce is the capability: it travels only in the
//     job's authenticated links.
//   - Nothing outlives the processes: a memfd has no name, and its memory
//     goes with the last descriptor and mapping. A reader unmaps the
//     segments of writers that are gone.
//
// Bit for bit the TCP path's result (a memcpy each way). A full segment
// falls back to inline for that tensor; nothing waits. A view a peer wrote
// can still be rewritten by it: receivers copy before they check.

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

/// What keeps a view's block (tensor::set_view): a writer's lease of a
/// block it filled, or a reader's hold of a block a reference named.
class hold;

/// The writer's side, used by tensor serialization.
/// Whether a reader proved it maps `c` (references may be sent).
bool confirmed(const channel& c) noexcept;
/// The segment, for offers.
segment_id id_of(const channel& c) noexcept;
/// Copies `bytes` bytes from `data` into a free block of `c`; false when
/// none is free (the caller sends them inline). The block is the reader's
/// to free: send the reference.
bool write(channel& c, const void* data, std::uint64_t bytes, block_ref& out);
/// Copies `bytes` bytes from `data` into a free block of `c` and leases it
/// to a tensor that views it (`where`: the copy): the block is not reused
/// while the lease lives, and is sent by reference at most once (ship).
/// Null when `c` is not confirmed or no block is free.
std::shared_ptr<const hold> lease(const std::shared_ptr<channel>& c,
                                  const void* data, std::uint64_t bytes,
                                  const void*& where);
/// If `h` is a lease of a block of `c` not sent yet: marks it sent, fills
/// `out` and returns true (the reader frees the block once it let it go).
bool ship(const hold& h, const channel& c, block_ref& out);

/// The reader's side, used by tensor deserialization.
/// Maps the offered segment if it checks out and marks it read; returns
/// "" or why not (an offer that fails is remembered and not retried).
std::string accept_offer(const segment_id& s);
/// Checks a reference against its segment and takes its block: `out` holds
/// it (freed for the writer when the last copy of `out` goes), `where` is
/// its first byte. Returns "" or why the reference is refused (a block
/// already taken, as by a replayed reference, is refused).
std::string take(const block_ref& r, std::shared_ptr<const hold>& out,
                 const void*& where);

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
