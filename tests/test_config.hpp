#pragma once

// The actor system of the node agent tests: troupe's types, no console log,
// two scheduler threads, and the middleman (a node id for the agent to
// obey).

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/io/middleman.hpp>

#include "messages/registry.hpp"

namespace troupe::test {

struct node_test_config : caf::actor_system_config {
  node_test_config() {
    messages::register_types(*this);
    set("logger.console", caf::atom("none"));
    set("scheduler.max-threads", 2);
    load<caf::io::middleman>(); // gives this process a node id to obey
  }
};

} // namespace troupe::test
