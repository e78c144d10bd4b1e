// LSGD's workers: their policy (lsgd_policy.cpp) and the typed view of a
// worker through which the group leaders and the leader board address it.

#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include <caf/typed_actor.hpp>

#include "actors/comm_policy.hpp"
#include "messages/consensus.hpp"
#include "messages/messages.hpp"
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"

namespace troupe::algos {

/// LSGD's view of a worker: what its group leader and the leader board send
/// it (handled by the worker's LSGD policy, make_lsgd_policy).
using lsgd_member_actor = caf::typed_actor<
    // The worker's leader score (running mean of recent losses).
    caf::replies_to<messages::score_atom>::with<messages::score_msg>,
    // As the elected leader, send the parameters to the targets; answered
    // once every target acknowledged them (or failed to).
    caf::replies_to<messages::lead_msg>::with<messages::ack_atom>,
    // A leader's parameters; pull toward them on arrival, acknowledged.
    caf::replies_to<messages::pull_msg>::with<messages::ack_atom>,
    // The replica's parameters (the global leader's are the evaluated
    // model; core).
    caf::replies_to<messages::fetch_msg>::with<messages::params_msg>>;

/// LSGD's workers (lsgd_policy.cpp): local steps, plus the handlers of the
/// leaders' messages (lsgd_member_actor): the score (the running mean of
/// the last `score_window` losses), lead (send the parameters to the
/// targets) and pull (x <- x - lambda * (x - leader), applied between
/// steps; ignored once the worker finished).
std::unique_ptr<actors::comm_policy> make_lsgd_policy(
    optim::optimizer_options optimizer, double lr, std::size_t parameters,
    std::optional<optim::schedule_options> schedule, std::size_t score_window);

} // namespace troupe::algos
