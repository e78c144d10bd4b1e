#pragma once

// The actor systems of the tests: troupe's message types and a set number of
// scheduler threads (typed_config); with the middleman (node_config: node
// agents obey only their coordinator's node, and without the middleman no
// actor has one); and with no console log besides (node_test_config, the
// node agent tests').

#include <cstddef>

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/io/middleman.hpp>

#include "messages/registry.hpp"

namespace troupe::test {

template <std::size_t Threads = 2>
struct typed_config : caf::actor_system_config {
  typed_config() {
    messages::register_types(*this);
    set("scheduler.max-threads", Threads);
  }
};

template <std::size_t Threads = 2>
struct node_config : typed_config<Threads> {
  node_config() {
    this->template load<caf::io::middleman>();
  }
};

struct node_test_config : node_config<> {
  node_test_config() {
    set("logger.console", caf::atom("none"));
  }
};

} // namespace troupe::test
