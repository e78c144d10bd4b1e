// ShadowSync's part of a run on the coordinator: one syncer per group of
// workers (one per node when the job is placed), spawned on the node of its
// workers before the start; their figures at the end.

#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "actors/algorithm.hpp"
#include "algos/shadow/shadow_syncer.hpp"

namespace troupe::algos {

class shadow;

class shadow_run : public actors::algorithm_run {
public:
  /// A run of `algo`, the job's algorithm (the job, and so `algo`, outlives
  /// the run).
  explicit shadow_run(const shadow& algo) : algo_(algo) {}

  void provision(actors::coordinator_ptr self,
                 std::function<void()> ready) override;
  bool on_down(actors::coordinator_ptr self, const caf::down_msg& msg) override;
  void finish(actors::coordinator_ptr self,
              std::function<void()> done) override;
  void stop(actors::coordinator_ptr self) override;
  void report(const actors::coordinator_state& st, nlohmann::json& out,
              std::uint64_t& messages, std::uint64_t& bytes) const override;

private:
  /// Every syncer exists: they get each other's handles (and start their
  /// rounds), then `ready`.
  void syncers_ready(actors::coordinator_ptr self,
                     const std::function<void()>& ready);

  const shadow& algo_;
  /// The syncers by index (null once lost) and their final statistics.
  std::vector<actors::shadow_syncer_actor> syncers_;
  nlohmann::json reports_ = nlohmann::json::array();
};

} // namespace troupe::algos
