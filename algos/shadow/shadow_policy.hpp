// ShadowSync's worker policy (shadow_policy.cpp); the syncer's view of the
// workers is shadow_member_actor (shadow_syncer.hpp).

#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include "actors/comm_policy.hpp"
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"

namespace troupe::algos {

/// ShadowSync's workers (shadow_policy.cpp): local steps that never wait,
/// plus the handler of the syncer's corrections (shadow_member_actor):
/// x <- x + delta, refused if its size is wrong or a value is not finite.
std::unique_ptr<actors::comm_policy>
make_shadow_policy(optim::optimizer_options optimizer, double lr,
                   std::size_t parameters,
                   std::optional<optim::schedule_options> schedule = {});

} // namespace troupe::algos
