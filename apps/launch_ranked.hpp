#pragma once

#include <optional>
#include <string>
#include <vector>

#include "apps/launcher_env.hpp"
#include "apps/train_command.hpp"

namespace troupe::apps {

/// troupe launch's flags for a process started by a cluster's launcher.
struct ranked_launch {
  launcher_flags flags;
  std::optional<std::string> rank, world_size; ///< as given
  bool explain = false; ///< print the place and role, start nothing
  /// Rank 0 continues --checkpoint-dir's latest complete checkpoint when
  /// there is one (a restarted pod, a requeued job).
  bool auto_resume = false;
  /// --coordinator-grace for the nodes (troupe node's; "" none given).
  std::string coordinator_grace;
  std::string node_shards = "0";
  std::string direct_links = "true";
};

/// troupe launch's train flags into `o` (its given flags recorded); false
/// when --help was asked. Refuses --expect, which comes from `expect_from`.
bool parse_launch_train_flags(const std::vector<std::string>& rest,
                              train_options& o, const char* expect_from);

/// One rank of a job whose processes a launcher started with the same
/// command line: rank 0 runs troupe train --listen with the other ranks as
/// its nodes; the others run troupe node. `rest`: the train flags.
int ranked_launch_main(ranked_launch r, std::vector<std::string> rest);

} // namespace troupe::apps
