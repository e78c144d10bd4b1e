#pragma once

// An actor system run by the simulator's scheduler, for the tests of sim/:
// `nodes` nodes on 10 Gb/s links of 5 us, computing as `compute` says.

#include <cstdint>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "messages/registry.hpp"
#include "sim/scheduler.hpp"

namespace troupe::test {

struct sim_system {
  struct config : caf::actor_system_config {
    config() {
      messages::register_types(*this);
      sim::scheduler::install(*this);
    }
  };
  config cfg;
  caf::actor_system sys{cfg};
  sim::scheduler& sched = sim::scheduler::of(sys);

  sim_system(std::uint32_t nodes, sim::compute_options compute) {
    sys.await_actors_before_shutdown(false);
    sim::network_options net;
    net.gbps = 10;
    net.latency_us = 5;
    sched.configure(nodes, net, std::move(compute));
  }
  ~sim_system() {
    sched.shutdown();
  }
};

} // namespace troupe::test
