// (d) The user's own node binary joining a job.
//
// A coordinator waits for nodes (`troupe train --listen=HOST:PORT
// --expect=1 ...`); this program is such a node, built by the application:
// it joins, builds the job from the coordinator's description as `troupe
// node` does, hosts the workers it is given and returns when the job ends.
//
//   own_node HOST:PORT [workers]
//
// Prints "own_node: <outcome>"; exits 0 when the job ended normally.

#include <cstdlib>
#include <iostream>
#include <troupe/apps/cluster_train.hpp>
#include <troupe/troupe.hpp>

using namespace troupe;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: own_node HOST:PORT [workers]\n";
    return 2;
  }
  try {
    // [snippet:own-node]
    net::node_options opts;
    opts.join = net::parse_endpoint(argv[1], "HOST:PORT");
    opts.workers = argc > 2 ? std::atoi(argv[2]) : 1;
    opts.join_timeout = 30;
    actors::node_agent_config agent;
    // How the node turns the coordinator's job description into a job: the
    // same data loading and models as `troupe node`.
    agent.build = apps::build_from_spec;
    auto outcome = net::run_node(opts, std::move(agent));
    // [/snippet]
    std::cout << "own_node: " << outcome.message << std::endl;
    return outcome.status;
  } catch (const std::exception& e) {
    std::cerr << "own_node: " << e.what() << '\n';
    return 2;
  }
}
