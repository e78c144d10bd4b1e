// ShadowSync's part of a run on the coordinator: one syncer per group of
// workers (one per node when the job is placed), spawned on the node of its
// workers before the start (from its checkpoint file in a resumed job);
// their pause after a common round and their states at a checkpoint; their
// figures at the end.

#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/algorithm.hpp"
#include "algos/shadow/shadow_state.hpp"
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
  /// S-EASGD: the syncers (not the workers) push to the center's shards.
  void shard_restored(actors::coordinator_ptr self, std::size_t i,
                      const caf::actor& h) override;
  bool pushes_sent(
      std::map<messages::worker_id, std::uint64_t>& sent) const override;
  void report(const actors::coordinator_state& st, nlohmann::json& out,
              std::uint64_t& messages, std::uint64_t& bytes) const override;

  /// A cut after a common round (shadow_pause.cpp): every syncer starts no
  /// new round and answers its own; then each runs its rounds up to the
  /// latest of them and has its members and shards receive what it sent.
  void quiesce(actors::coordinator_ptr self,
               std::function<void(std::string)> done) override;
  /// Every syncer's state (shadow_state.hpp).
  void save(actors::coordinator_ptr self,
            std::function<void(state_files, std::string)> done) override;
  void resume(actors::coordinator_ptr self) override;
  /// Reads the syncers' files (checked here and at the spawn, used by
  /// provision()).
  void restore(const actors::resume_point& from) override;

private:
  /// Every syncer exists: they get each other's handles (and start their
  /// rounds), then `ready`.
  void syncers_ready(actors::coordinator_ptr self,
                     const std::function<void()>& ready);

  const shadow& algo_;
  /// The syncers by index (null once lost) and their final statistics.
  std::vector<shadow_syncer_actor> syncers_;
  nlohmann::json reports_ = nlohmann::json::array();
  /// A resumed job: the syncers' files by index (sent to a node that hosts
  /// one), the states read from them, and where they came from.
  std::vector<std::string> states_;
  std::vector<std::shared_ptr<const shadow_syncer_saved>> saved_;
  std::string resumed_from_;
};

} // namespace troupe::algos
