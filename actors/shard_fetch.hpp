#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/comm_policy.hpp"
#include "messages/tensor.hpp"

// A policy's fetch of every shard that survives the loss of a shard's node
// (issue [11]): a failed fetch waits one request timeout for the shard's new
// handle, which the coordinator sends (rebind_atom) once it restored the
// shard from a checkpoint or its backup took over, then starts again; past
// the wait it fails the worker naming the shard. The policies of the
// algorithms whose shards the coordinator restores
// (algorithm::restores_shards) fetch through it.

namespace troupe::actors {

class shard_fetch {
public:
  /// `shards` and `versions` are the policy's own (they outlive this).
  shard_fetch(std::vector<shard_ref>& shards,
              std::vector<std::uint64_t>& versions)
      : shards_(shards), versions_(versions) {}

  /// Fetches every shard's range into `dest` (the model's flat vector),
  /// then runs `ready` once. An earlier fetch's replies are ignored.
  /// `count_wait`: the fetch's time is the worker's wait (not a prefetch's).
  void start(worker_context& ctx, float* dest, std::function<void()> ready,
             bool count_wait = true);

  /// Fetches every shard's range and keeps the replies' values (a
  /// prefetch: copied out by install once the step needs them).
  void start_kept(worker_context& ctx, std::function<void()> ready,
                  bool count_wait = false);

  /// Copies the kept values into `dest` (the model's flat vector) and lets
  /// them go.
  void install(float* dest);

  /// A fetch is under way (started, `ready` not yet run).
  bool under_way() const noexcept {
    return static_cast<bool>(ready_);
  }

  /// rebind_atom's message: shard i's new handle. Taken only from the
  /// job's coordinator and for a shard of the job; false: ignored.
  bool rebind(worker_context& ctx, std::uint32_t i, const caf::actor& h);

  /// After a rebind: a fetch under way starts again, from every shard
  /// (true), else nothing (false).
  bool restart(worker_context& ctx);

  /// The policy's on_timeout: the wait for a lost shard's new handle ran
  /// out, the worker fails with the fetch's error.
  void on_timeout(worker_context& ctx, std::uint64_t seq);

private:
  std::vector<shard_ref>& shards_;
  std::vector<std::uint64_t>& versions_;
  float* dest_ = nullptr; ///< null: the replies are kept
  std::vector<messages::tensor> kept_;
  std::function<void()> ready_;
  std::shared_ptr<bool> cancel_;
  std::string lost_; ///< the failed fetch's error, while waiting
  std::uint64_t wait_seq_ = 0, waits_ = 0;
  bool count_wait_ = true;
};

} // namespace troupe::actors
