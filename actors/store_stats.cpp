// What a parameter store reports (actors/parameter_shard.hpp): shared by the
// parameter shard and the servers of algorithms built on it (Gaia's).

#include <map>

#include "actors/parameter_shard.hpp"
#include "optim/param_hash.hpp"

namespace troupe::actors {

using messages::shard_stats;
using messages::worker_id;
using messages::worker_pushes;

shard_stats store_stats(const optim::shard_store<float>& store,
                        std::map<worker_id, worker_pushes> rejected) {
  shard_stats out;
  out.offset = store.range().offset;
  out.size = store.range().size;
  out.version = store.version();
  out.staleness_histogram = store.staleness_histogram();
  out.staleness_max = store.staleness_max();
  out.staleness_sum = store.staleness_sum();
  for (auto& [w, rec] : store.workers()) {
    auto& x = rejected[w];
    x.worker = w;
    x.applied = rec.applied;
    x.duplicates = rec.duplicates;
  }
  for (auto& [w, x] : rejected)
    out.workers.push_back(x);
  out.params_hash = optim::hash_params(store.params(), store.range().size);
  return out;
}

} // namespace troupe::actors
