#pragma once

#include <cstdint>
#include <vector>

namespace troupe::net {

/// What a node offers.
struct node_slots {
  std::uint32_t workers = 0;
  std::uint32_t shards = 0;
};

/// Per worker and per shard: the node index, -1 for the coordinator's own
/// process.
struct placement {
  std::vector<std::int32_t> worker_node;
  std::vector<std::int32_t> shard_node;
};

/// Places workers and shards on the nodes' slots, round robin (worker w on
/// the next node that has a free worker slot, so the nodes fill evenly).
/// What does not fit runs in the coordinator's process.
placement place(std::uint32_t workers, std::uint32_t shards,
                const std::vector<node_slots>& nodes);

/// Per shard placed at shard_node: where its hot backup runs, on another
/// node than its primary (the next one after it with a shard slot, else
/// the next one), or in the coordinator's process (-1) when no other node
/// exists. A backup takes no slot: it is the same shard twice.
std::vector<std::int32_t>
place_backups(const std::vector<std::int32_t>& shard_node,
              const std::vector<node_slots>& nodes);

} // namespace troupe::net
