// LSGD's part of a run on the coordinator: one group leader per group and
// the leader board over them, spawned in the coordinator's process; the
// board is told the job's step count and serves the evaluated model.

#pragma once

#include <memory>
#include <vector>

#include "actors/algorithm.hpp"
#include "algos/lsgd/group_leader.hpp"
#include "algos/lsgd/leader_board.hpp"

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

private:
  optim::lsgd_options settings_;
  std::vector<std::uint32_t> group_of_;
  std::vector<actors::group_leader_actor> group_leaders_;
  actors::leader_board_actor board_;
  std::shared_ptr<actors::lsgd_record> record_;
};

} // namespace troupe::algos
