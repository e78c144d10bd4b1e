#include "apps/node_command.hpp"

#include <iostream>

#include "actors/detail/log.hpp"
#include "algos/registry.hpp"
#include "apps/cli.hpp"
#include "apps/cluster_train.hpp"
#include "apps/interrupt.hpp"
#include "apps/link_flags.hpp"
#include "net/node.hpp"

namespace troupe::apps {

namespace {

/// Seconds a signalled node waits for its coordinator to end the job: well
/// inside Slurm's KillWait (30 s by default) and Kubernetes' grace period.
constexpr double node_signal_grace = 15;

} // namespace

int node_main(const std::vector<std::string>& args,
              const std::string& program) {
  actors::detail::set_log_program(program);
  std::string join;
  std::uint64_t workers = 1, shards = 0, threads = 0;
  double grace = 0;
  std::string peer_listen;
  bool direct = true;
  link_flags link;
  option_parser p{"troupe node"};
  p.add(join, "join", "HOST:PORT of the coordinator (troupe train --listen)")
      .add(workers, "workers", "worker slots this node offers (default 1)")
      .add(shards, "shards",
           "parameter-shard slots this node offers (default 0: shards stay "
           "with the coordinator)")
      .add(threads, "threads", "actor scheduler threads (0: one per core)")
      .add(grace, "coordinator-grace",
           "seconds to wait, once the coordinator is lost, for one restarted "
           "at the same address (troupe train --resume) to admit this node "
           "again (default 0: exit at once)")
      .add(direct, "direct-links",
           "link to the job's other nodes directly, through a peer port of "
           "this node's own behind the same guard, TLS and token (default "
           "true; false: their traffic goes through the coordinator)")
      .add(peer_listen, "peer-listen",
           "HOST:PORT of that peer port, as other nodes reach it (default: "
           "the address this host reaches the coordinator from, any port; "
           "0.0.0.0: every interface, that address advertised)");
  add_link_options(p, link);
  return guarded_main("troupe node", [&] {
    if (!p.parse(args))
      return 0;
    if (join.empty())
      throw usage_error("troupe node: --join=HOST:PORT is required");
    if (workers > 4096 || shards > 1024)
      throw usage_error("troupe node: at most 4096 workers and 1024 shards");
    net::node_options o;
    try {
      o.join = net::parse_endpoint(join, "--join");
    } catch (const std::invalid_argument& e) {
      throw usage_error(std::string{"troupe node: "} + e.what());
    }
    if (!peer_listen.empty()) {
      try {
        o.peer_listen = net::parse_endpoint(peer_listen, "--peer-listen");
      } catch (const std::invalid_argument& e) {
        throw usage_error(std::string{"troupe node: "} + e.what());
      }
      if (o.peer_listen.host.empty())
        throw usage_error("troupe node: --peer-listen needs a HOST: the "
                          "address other nodes reach this one at");
    }
    o.direct = direct;
    o.workers = static_cast<std::uint32_t>(workers);
    o.shards = static_cast<std::uint32_t>(shards);
    o.join_timeout = link.join_timeout;
    if (!(grace >= 0 && grace <= 86400))
      throw usage_error("troupe node: --coordinator-grace must be in [0, "
                        "86400] seconds");
    o.coordinator_grace = grace;
    o.link = link_settings(link, "troupe node");
    o.threads = threads;
    if (o.workers == 0 && o.shards == 0)
      throw usage_error("troupe node: --workers or --shards must be above 0");
    actors::node_agent_config agent;
    agent.build = build_from_spec;
    // The roles this node spawns by name: the shared ones and every
    // registered algorithm's own; a node binary of one's own adds its roles
    // to these (algos/registry.hpp).
    agent.roles = algos::node_roles();
    // SIGINT/SIGTERM: stay for the coordinator's clean stop, at most
    // node_signal_grace seconds (apps/interrupt.hpp).
    auto watch = interrupt_watch::for_node(program, node_signal_grace);
    auto out = net::run_node(o, std::move(agent));
    auto status = watch->exit_status(out.status);
    watch.reset();
    std::cerr << program << ": " << (out.status == 0 ? "" : "error: ")
              << out.message << '\n';
    return status;
  });
}

} // namespace troupe::apps
