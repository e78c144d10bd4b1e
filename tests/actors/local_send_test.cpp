// Local sends share the payload instead of copying it (CAF 0.17 messages are
// copy-on-write). Checks, by comparing data pointers exactly:
//  (a) a push_msg sent with std::move to an event-based actor whose handler
//      takes `push_msg&` arrives with the sender's buffer (1 KB and 16 MB);
//  (b) one caf::message holding a push_msg sent to 3 receivers whose handlers
//      take `const push_msg&` is seen by all three with the same buffer.

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/after.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/message.hpp>
#include <caf/scoped_actor.hpp>
#include <catch2/catch.hpp>

#include "messages/messages.hpp"
#include "messages/registry.hpp"
#include "test_config.hpp"

using namespace troupe;
using messages::push_msg;
using messages::tensor;

namespace {

using config = test::typed_config<>;

std::uint64_t addr(const float* p) {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
}

push_msg make_push(std::size_t n) {
  push_msg p;
  p.worker = 3;
  p.seq = 7;
  p.values = tensor{std::vector<float>(n, 1.5f)};
  return p;
}

/// Waits for one pointer reply; a missing reply fails the test.
std::uint64_t await_addr(caf::scoped_actor& self) {
  std::uint64_t got = 0;
  self->receive([&](std::uint64_t x) { got = x; },
                caf::after(std::chrono::seconds(10)) >>
                    [&] { FAIL("no reply within 10 s"); });
  return got;
}

} // namespace

TEST_CASE("a moved push_msg reaches a push_msg& handler without a copy") {
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto receiver = sys.spawn([]() -> caf::behavior {
    return {[](push_msg& p) { return addr(p.values.data()); }};
  });
  for (std::size_t n : {std::size_t{256}, std::size_t{1} << 22}) {
    INFO("floats " << n);
    auto p = make_push(n);
    const auto sent = addr(p.values.data());
    REQUIRE(sent != 0);
    self->send(receiver, std::move(p));
    CHECK(await_addr(self) == sent);
  }
  self->send_exit(receiver, caf::exit_reason::user_shutdown);
}

TEST_CASE("one message sent to 3 receivers is shared, not copied") {
  config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::vector<caf::actor> receivers;
  for (int i = 0; i < 3; ++i)
    receivers.push_back(sys.spawn([]() -> caf::behavior {
      return {[](const push_msg& p) { return addr(p.values.data()); }};
    }));
  auto msg = caf::make_message(make_push(std::size_t{1} << 16));
  const auto sent = addr(msg.get_as<push_msg>(0).values.data());
  REQUIRE(sent != 0);
  for (auto& r : receivers)
    self->send(r, msg);
  for (std::size_t i = 0; i < receivers.size(); ++i) {
    INFO("reply " << i);
    CHECK(await_addr(self) == sent);
  }
  // The message we hold still owns the same, untouched buffer.
  CHECK(addr(msg.get_as<push_msg>(0).values.data()) == sent);
  for (auto& r : receivers)
    self->send_exit(r, caf::exit_reason::user_shutdown);
}
