#include "net/placement.hpp"

namespace troupe::net {

namespace {

std::vector<std::int32_t> fill(std::uint32_t count,
                               std::vector<std::uint32_t> free) {
  std::vector<std::int32_t> where(count, -1);
  std::size_t next = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    for (std::size_t tried = 0; tried < free.size(); ++tried) {
      auto n = (next + tried) % free.size();
      if (free[n] > 0) {
        --free[n];
        where[i] = static_cast<std::int32_t>(n);
        next = n + 1;
        break;
      }
    }
  }
  return where;
}

} // namespace

placement place(std::uint32_t workers, std::uint32_t shards,
                const std::vector<node_slots>& nodes) {
  std::vector<std::uint32_t> w, s;
  for (const auto& n : nodes) {
    w.push_back(n.workers);
    s.push_back(n.shards);
  }
  return {fill(workers, w), fill(shards, s)};
}

std::vector<std::int32_t>
place_backups(const std::vector<std::int32_t>& shard_node,
              const std::vector<node_slots>& nodes) {
  auto n = static_cast<std::int32_t>(nodes.size());
  std::vector<std::int32_t> out;
  for (auto p : shard_node) {
    std::int32_t pick = -1;
    // Candidates after the primary's node, in order; the coordinator's
    // process (p = -1) counts as before node 0.
    for (int pass = 0; pass < 2 && pick < 0; ++pass)
      for (std::int32_t k = 1; k <= n && pick < 0; ++k) {
        auto c = ((p < 0 ? -1 : p) + k + n) % n;
        if (c == p)
          continue;
        if (pass == 1 || nodes[static_cast<std::size_t>(c)].shards > 0)
          pick = c;
      }
    out.push_back(pick);
  }
  return out;
}

} // namespace troupe::net
