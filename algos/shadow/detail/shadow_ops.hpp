#pragma once

// The shadow syncer's steps shared by its source files: shadow_syncer.cpp
// (rounds, snapshots, model averaging and BMUF) and shadow_easgd.cpp (the
// exchange with the center on the shards).

#include <cstddef>

#include "algos/shadow/shadow_syncer.hpp"

namespace troupe::actors::detail {

using syncer_ptr = shadow_syncer_actor::stateful_pointer<shadow_syncer_state>;

/// The parameters per model.
std::size_t params_of(const shadow_syncer_state& st);

/// Ends the round (counters, sync gap) and schedules the next one.
void end_round(syncer_ptr self);

/// Sends member i the correction target - snapshot_i.
void correct(syncer_ptr self, std::size_t i, const float* target);

/// S-EASGD: reads the center from the shards, then corrects the members
/// and pushes the sum of their elastic differences; ends the round.
void fetch_center(syncer_ptr self);

} // namespace troupe::actors::detail
