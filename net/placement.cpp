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

} // namespace troupe::net
