// A worker's pushes received by its shards, for a checkpoint's pause
// (comm_policy::quiesce) of the algorithms that push to shards of their
// own kind (EASGD's center, ShadowSync's S-EASGD).

#pragma once

#include <functional>
#include <vector>

#include "actors/comm_policy.hpp"

namespace troupe::algos {

/// Asks every shard for a flush and calls `done` once all answered (or
/// failed: a lost shard's save fails the checkpoint): CAF delivers one
/// sender's messages in order, so every earlier push and fetch of this
/// worker has then been handled.
void flush_shards(actors::worker_context& ctx,
                  const std::vector<actors::shard_ref>& shards,
                  std::function<void()> done);

} // namespace troupe::algos
