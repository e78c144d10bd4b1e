// Hot shard replicas (--shard-replicas, issue [11]): a primary shard's
// backup, attached by the coordinator, takes the primary's state and then
// every push the primary receives, in the order received; it applies them
// as the primary did, so it holds the same parameters, version and
// de-duplication table. When the primary's node is lost the coordinator
// points the workers at the backup (coordinator_replica.cpp); the workers
// resend their recent pushes, which the backup's de-duplication makes safe.

#pragma once

#include <functional>
#include <string>

#include <caf/actor.hpp>
#include <caf/result.hpp>

#include "actors/parameter_shard.hpp"

namespace troupe::actors::detail {

using shard_self
    = parameter_shard_actor::stateful_pointer<parameter_shard_state>;

/// The coordinator's node (or this process) is asking.
bool from_owner(shard_self self);

/// A backup: the replicated message comes from its primary; else it is
/// refused (logged, counted) and false.
bool from_primary(shard_self self, const char* what);

/// A push straight from a worker: a backup receiving its first one serves
/// in its primary's place now (logged once).
void note_direct(shard_self self);

/// Flow control of a primary's forwarding: after every 32 pushes or 4 MiB
/// forwarded the primary asks its backup for a flush (answered after every
/// push before it); while this many are unanswered it answers no fetch, so
/// the workers wait instead of outrunning the backup (a flooded link delays
/// the heartbeats until the nodes lose each other).
constexpr std::uint32_t max_unanswered_flushes = 4;

/// The fetches waiting (shard clocks, the backup's flow control) that may be
/// answered now (parameter_shard.cpp).
void serve_waiting(parameter_shard_state& st);

/// A primary: hands the push just handled on to its backup, if any.
void forward(shard_self self, messages::push_msg&& p);
void forward(shard_self self, messages::compressed_push_msg&& c);

/// A primary: attaches `backup` (null: detaches), sends it the state; true
/// once the backup holds it.
caf::result<bool> attach_backup(shard_self self, caf::actor backup);

/// A backup: its primary's state (save_shard's bytes).
caf::result<bool> take_primary_state(shard_self self, const std::string& state);

/// The shard's statistics, taken now; a primary's carry its backup's
/// version and parameter hash once the backup has handled every push
/// forwarded before.
caf::result<messages::shard_stats> stats_after_backup(
    shard_self self,
    const std::function<messages::shard_stats(const parameter_shard_state&)>&
        make_stats);

} // namespace troupe::actors::detail
