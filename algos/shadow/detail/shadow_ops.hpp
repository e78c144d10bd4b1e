#pragma once

// The shadow syncer's steps shared by its source files: shadow_syncer.cpp
// (rounds, snapshots, model averaging and BMUF), shadow_easgd.cpp (the
// exchange with the center on the shards) and shadow_pause.cpp (a
// checkpoint's pause, save and resume).

#include <cstddef>
#include <cstdint>
#include <string>

#include <caf/make_message.hpp>
#include <caf/result.hpp>

#include "algos/shadow/shadow_syncer.hpp"

namespace troupe::algos::detail {

using syncer_ptr = shadow_syncer_actor::stateful_pointer<shadow_syncer_state>;

/// The parameters per model.
std::size_t params_of(const shadow_syncer_state& st);

/// Starts the next round unless one is under way or a pause holds it.
void start_round(syncer_ptr self);

/// Schedules the next round after the period (the syncer's one timer).
void next_round(syncer_ptr self);

/// Ends the round (counters, sync gap) and schedules the next one, or,
/// paused, goes on with the pause (after_round_paused).
void end_round(syncer_ptr self);

/// Sends member i the correction target - snapshot_i.
void correct(syncer_ptr self, std::size_t i, const float* target);

/// S-EASGD: reads the center from the shards, then corrects the members
/// and pushes the sum of their elastic differences; ends the round.
void fetch_center(syncer_ptr self);

/// rebind_atom: S-EASGD's shard k was restored (its node lost) with handle
/// `h`; taken from the owner's node only.
void rebind_center(syncer_ptr self, std::uint32_t k, caf::actor& h);

// -- a checkpoint (shadow_pause.cpp) ---------------------------------------

/// The checkpoint's verbs (and a restored shard's handle) come from the
/// owner's node (the coordinator's) or this process.
bool from_owner(syncer_ptr self);

/// pause_atom: start no new round; the round under way or the last one.
caf::result<std::uint64_t> pause(syncer_ptr self);

/// (pause_atom, r): rounds up to r, flushes, then the answer.
caf::result<messages::ack_atom> drain(syncer_ptr self, std::uint64_t r);

/// A round ended while paused: the next one up to drain_to, or the flush.
void after_round_paused(syncer_ptr self);

/// save_atom: the state between rounds (shadow_state.hpp).
caf::result<std::string> save(syncer_ptr self);

/// resume_atom: rounds go on.
void resume(syncer_ptr self);

} // namespace troupe::algos::detail
