// All-reduce SGD's messages on the ring of optim::ring_plan (algorithms.md
// §12 and "All-reduce SGD"): worker r sends to r + 1 and hears from r - 1
// (mod W); a step's vector is cut into W chunks; each worker sends 2 (W - 1)
// messages per step, the first W - 1 reduce-scatter hops, then W - 1
// all-gather hops, and sends its message k + 1 (the plan's step k + 1) once
// it has taken its predecessor's message k: the chunk it sends is the one
// that message brought. Here: the phase and hop of message k, and the
// checks of a received chunk, apart from the actors so tests reach them.

#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "messages/allreduce.hpp"
#include "optim/ring_plan.hpp"

namespace troupe::algos {

/// Examples one worker's step may count (the core's counts are 32-bit).
inline constexpr std::uint64_t ring_max_worker_samples = std::uint64_t{1} << 32;

/// The phase of a worker's message k of a step.
messages::ring_phase ring_phase_of(const optim::ring_plan& plan,
                                   std::size_t k) noexcept;

/// The hop of message k within its phase (0 .. W - 2).
std::uint32_t ring_hop_of(const optim::ring_plan& plan, std::size_t k) noexcept;

/// "reduce-scatter hop 1", "all-gather hop 0".
std::string ring_position(const optim::ring_plan& plan, std::size_t k);

/// Why `m` is not worker r's message k of step `step` (empty: it is): its
/// sender is not r's predecessor, or its step, phase, hop or chunk are not
/// the ones expected. Such a message is refused and the worker goes on (a
/// stranger's, a stale or a duplicate one).
std::string ring_header_problem(const optim::ring_plan& plan, std::size_t r,
                                std::uint64_t step, std::size_t k,
                                const messages::ring_chunk_msg& m);

/// Why the payload of a message whose header fits is unusable (empty: it is
/// usable): not one value per entry of its chunk, more than `max_samples`
/// examples, or a NaN or infinite value. Checked before any value is used;
/// the step cannot complete without it.
std::string ring_payload_problem(const optim::ring_plan& plan,
                                 const messages::ring_chunk_msg& m,
                                 std::uint64_t max_samples);

/// Why a finished exchange's chunks cannot be used (empty: they can): they
/// sum different numbers of examples (`count`, one a chunk) at step `step`.
std::string ring_counts_problem(const std::vector<std::uint64_t>& count,
                                std::uint64_t step);

/// What worker r waits for: "no message k + 1 of K (its position) of
/// exchange `seq` (step seq / exchanges) from ring predecessor p".
std::string ring_missing(const optim::ring_plan& plan, std::size_t r,
                         std::size_t k, std::uint64_t seq,
                         std::size_t exchanges);

} // namespace troupe::algos
