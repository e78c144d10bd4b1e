// LSGD's part of a run on the coordinator: one group leader per group and
// the leader board over them, spawned in the coordinator's process; the
// board is told the job's step count and serves the evaluated model.

#pragma once

#include <memory>
#include <vector>

#include "actors/algorithm.hpp"
#include "algos/lsgd/group_leader.hpp"
#include "algos/lsgd/leader_board.hpp"
#include "algos/lsgd/lsgd_state.hpp"

namespace troupe::algos {

class lsgd_run : public actors::algorithm_run {
public:
  /// LSGD's settings and each worker's group (empty: by node, or
  /// settings.groups blocks).
  lsgd_run(optim::lsgd_options settings, std::vector<std::uint32_t> group_of);

  void provision(actors::coordinator_ptr self,
                 std::function<void()> ready) override;
  caf::actor evaluation_source() const override;
  std::uint32_t groups() const noexcept override;
  void on_steps(actors::coordinator_ptr self, std::uint64_t total) override;
  void stop(actors::coordinator_ptr self) override;
  void report(const actors::coordinator_state& st, nlohmann::json& out,
              std::uint64_t& messages, std::uint64_t& bytes) const override;

  /// The board holds new rounds and answers once the one under way is
  /// over: its pulls are then in their targets' parameters.
  void quiesce(actors::coordinator_ptr self,
               std::function<void(std::string)> done) override;
  /// The board's and every group leader's state (lsgd_state.hpp).
  void save(actors::coordinator_ptr self,
            std::function<void(state_files, std::string)> done) override;
  void resume(actors::coordinator_ptr self) override;
  /// Reads the board's and the group leaders' files (checked here, used
  /// by provision()).
  void restore(const actors::resume_point& from) override;

private:
  optim::lsgd_options settings_;
  std::vector<std::uint32_t> group_of_;
  std::vector<group_leader_actor> group_leaders_;
  leader_board_actor board_;
  std::shared_ptr<lsgd_record> record_;
  /// A resumed job: the roles' saved states (the groups' by index).
  std::shared_ptr<const leader_board_saved> board_state_;
  std::vector<std::shared_ptr<const group_leader_saved>> group_states_;
  std::string resumed_from_;
};

} // namespace troupe::algos
