#include "actors/shard_fetch.hpp"

#include <utility>

#include <caf/actor.hpp>
#include <caf/actor_cast.hpp>

namespace troupe::actors {

void shard_fetch::start(worker_context& ctx, float* dest,
                        std::function<void()> ready, bool count_wait) {
  dest_ = dest;
  count_wait_ = count_wait;
  ready_ = std::move(ready);
  if (cancel_)
    *cancel_ = true; // the replies of an earlier attempt are ignored
  cancel_ = std::make_shared<bool>(false);
  lost_.clear();
  fetch_all(
      ctx, shards_, dest_, versions_,
      [this] {
        auto ready = std::move(ready_);
        ready_ = nullptr;
        ready();
      },
      [this, &ctx](std::size_t, std::string why) {
        if (!lost_.empty())
          return ctx.fail(std::move(why));
        // This attempt's other replies are ignored; the next starts at the
        // rebind, or the worker fails at the timeout.
        *cancel_ = true;
        lost_ = std::move(why);
        // Numbers of their own, far from a peer policy's round numbers.
        wait_seq_ = ~std::uint64_t{0} - ++waits_;
        ctx.schedule_timeout(wait_seq_);
      },
      cancel_, count_wait_, dest_ ? nullptr : &kept_);
}

void shard_fetch::start_kept(worker_context& ctx, std::function<void()> ready,
                             bool count_wait) {
  kept_.resize(shards_.size());
  start(ctx, nullptr, std::move(ready), count_wait);
}

void shard_fetch::install(float* dest) {
  for (std::size_t i = 0; i < kept_.size() && i < shards_.size(); ++i) {
    kept_[i].copy_to(dest + shards_[i].range.offset);
    kept_[i] = messages::tensor{};
  }
}

bool shard_fetch::rebind(worker_context& ctx, std::uint32_t i,
                         const caf::actor& h) {
  if (!ctx.from_coordinator() || i >= shards_.size() || !h)
    return false;
  shards_[i].handle = caf::actor_cast<parameter_shard_actor>(h);
  return true;
}

bool shard_fetch::restart(worker_context& ctx) {
  if (!ready_)
    return false;
  start(ctx, dest_, std::move(ready_), count_wait_);
  return true;
}

void shard_fetch::on_timeout(worker_context& ctx, std::uint64_t seq) {
  if (seq == wait_seq_ && !lost_.empty() && ready_ && !ctx.finished())
    ctx.fail(lost_ + " (and no restored shard within the timeout)");
}

} // namespace troupe::actors
