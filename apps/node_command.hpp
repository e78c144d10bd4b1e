#pragma once

#include <string>
#include <vector>

namespace troupe::apps {

/// Entry point of `troupe node --join=HOST:PORT`: joins a distributed job
/// and hosts the roles it is given until the job ends. Returns the exit
/// status (0 the job ended, 1 refused / unreachable / coordinator lost,
/// 2 usage error). `program` names its log lines.
int node_main(const std::vector<std::string>& args,
              const std::string& program = "troupe node");

/// Entry point of `troupe launch --local=M | --hosts=FILE [train flags]`:
/// runs `troupe train --listen` here and starts its nodes (local processes,
/// or over ssh on the hosts of FILE). Returns train's exit status.
int launch_main(const std::vector<std::string>& args);

} // namespace troupe::apps
