#include "algos/shard_flush.hpp"

#include <memory>

#include <caf/typed_event_based_actor.hpp>

namespace troupe::algos {

void flush_shards(actors::worker_context& ctx,
                  const std::vector<actors::shard_ref>& shards,
                  std::function<void()> done) {
  if (shards.empty()) {
    done();
    return;
  }
  auto left = std::make_shared<std::size_t>(shards.size());
  auto one = [left, done] {
    if (--*left == 0)
      done();
  };
  for (const auto& sh : shards)
    ctx.self()
        ->request(sh.handle, ctx.request_timeout(), messages::flush_atom::value)
        .then([one](std::uint64_t) { one(); }, [one](caf::error&) { one(); });
}

} // namespace troupe::algos
