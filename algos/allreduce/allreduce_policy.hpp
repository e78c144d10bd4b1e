// All-reduce SGD's worker policy (allreduce_policy.cpp) and the typed view
// its senders use.

#pragma once

#include <cstddef>
#include <memory>

#include <caf/typed_actor.hpp>

#include "actors/comm_policy.hpp"
#include "algos/allreduce/reducer.hpp"
#include "messages/allreduce.hpp"

namespace troupe::algos {

/// A worker as its ring predecessor sees it: what it sends it.
using ring_peer_actor
    = caf::typed_actor<caf::reacts_to<messages::ring_chunk_msg>>;

/// All-reduce SGD (algorithms.md "All-reduce SGD"): after each step's
/// computation the worker weighs its mean gradient by its examples, takes
/// part in a ring all-reduce of it with the other workers (reduce-scatter,
/// then all-gather; every sum computed once, on one worker, in ring order,
/// so every worker gets the same bits) and applies the sum over the
/// examples of the step with its optimizer: every replica takes the same
/// update. Chunks are taken only from the ring predecessor, as the next
/// message of the step; a lost worker or a chunk that cannot be used ends
/// the worker with an error (no step can complete without every worker),
/// and so does a wait longer than the request timeout. With PowerSGD or
/// ScaleCom (`reduce`) a step is two all-reduces of their summable vectors
/// (algos/allreduce/reducer.hpp); `rank` is the worker's.
std::unique_ptr<actors::comm_policy>
make_allreduce_policy(actors::peer_policy_options opts,
                      const reducer_options& reduce, std::size_t parameters,
                      std::uint32_t rank);

} // namespace troupe::algos
