// Gaia's run (algos/gaia/gaia.hpp): spawns a server per group, on the
// node of the group's first worker (the node agent's role "gaia_server")
// or here, tells each server the others and each worker its server, and
// gathers the servers' figures at the end.

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/algorithm.hpp"
#include "actors/role_registry.hpp"
#include "algos/gaia/gaia_server.hpp"

namespace troupe::algos {

class gaia;

/// Server g's settings from the job (the same in every process).
gaia_server_config gaia_server_config_of(const gaia& algo,
                                         const actors::job_config& job,
                                         std::uint32_t g, std::uint32_t groups,
                                         std::uint32_t members);

/// Throws optim::data_error naming what in a checkpoint's server state
/// does not fit server `sc`.
void check_gaia_state(const gaia_server_config& sc, const std::string& state);

/// Registers the node agent's roles "gaia_server" (group, groups, members)
/// and "resumed_gaia_server" (the same and its checkpoint file).
void add_gaia_roles(actors::role_registry& roles);

class gaia_run : public actors::algorithm_run {
public:
  explicit gaia_run(const gaia& algo);

  void provision(actors::coordinator_ptr self,
                 std::function<void()> ready) override;
  caf::actor evaluation_source() const override;
  std::uint32_t groups() const noexcept override;
  bool on_down(actors::coordinator_ptr self, const caf::down_msg& msg) override;
  void finish(actors::coordinator_ptr self,
              std::function<void()> done) override;
  void stop(actors::coordinator_ptr self) override;
  void report(const actors::coordinator_state& st, nlohmann::json& out,
              std::uint64_t& messages, std::uint64_t& bytes) const override;
  /// Each server's state, once it holds every change the others sent
  /// before the checkpoint (their markers).
  void save(actors::coordinator_ptr self,
            std::function<void(state_files, std::string)> done) override;
  void restore(const actors::resume_point& from) override;

private:
  /// Every server exists: peers to each, each worker its server, then
  /// `ready` once every worker answered.
  void wire(actors::coordinator_ptr self, std::function<void()> ready);

  const gaia& algo_;
  std::vector<std::uint32_t> group_of_;
  std::vector<std::uint32_t> members_;
  std::vector<gaia_server_actor> servers_;
  /// Answers the evaluator's fetches from the first live server.
  caf::actor source_;
  std::vector<nlohmann::json> figures_;
  /// A resumed job's server states, by group.
  std::string resumed_from_;
  std::vector<std::string> states_;
};

} // namespace troupe::algos
