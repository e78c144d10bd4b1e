// The simulator's message sizes (sim/size_counter.hpp): the same total as
// CAF's serialized_size, the tensors' values (and compressed blocks) apart
// as payload, and payloads scaled exactly for --virtual-params, on the
// links too (sim/scheduler.hpp).

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/detail/serialized_size.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/mailbox_element.hpp>
#include <catch2/catch.hpp>

#include "messages/compressed.hpp"
#include "messages/messages.hpp"
#include "messages/registry.hpp"
#include "sim/scheduler.hpp"
#include "sim/size_counter.hpp"
#include "sim_system.hpp"

using namespace troupe;

namespace {

/// A message as the scheduler sees it: a mailbox element's content.
template <class... Ts>
caf::mailbox_element_ptr element(Ts... xs) {
  return caf::make_mailbox_element(nullptr, caf::make_message_id(), {},
                                   std::move(xs)...);
}

std::uint64_t caf_size(const caf::mailbox_element_ptr& m) {
  caf::detail::serialized_size_inspector f{
      static_cast<caf::execution_unit*>(nullptr)};
  REQUIRE(!m->content().save(f));
  return f.result();
}

sim::message_size measure(const caf::mailbox_element_ptr& m) {
  return sim::measure(m->content());
}

messages::push_msg push_of(std::size_t n) {
  messages::push_msg p;
  p.worker = 3;
  p.seq = 1000;
  p.samples = 64;
  p.values = messages::tensor{std::vector<float>(n, 0.5f)};
  return p;
}

} // namespace

TEST_CASE("a message's size is CAF's, its tensor values apart") {
  for (std::size_t n : {0, 1, 1000, 200000}) {
    INFO(n << " values");
    auto m = element(push_of(n));
    auto size = measure(m);
    CHECK(size.total() == caf_size(m));
    CHECK(size.payload == 4 * n);
    CHECK(size.header > 0);
  }
  // Two tensors in one message; a header that is no tensor's.
  auto two = element(push_of(10), std::string{"note"}, push_of(7));
  CHECK(measure(two).total() == caf_size(two));
  CHECK(measure(two).payload == 4 * 17);
  // Floats one by one and text: no payload.
  auto plain = element(std::vector<float>(300, 1.0f), std::string(1000, 'x'),
                       std::uint64_t{75});
  CHECK(measure(plain).total() == caf_size(plain));
  CHECK(measure(plain).payload == 0);
  // A compressed push's packed block is its values' payload.
  messages::compressed_push_msg c;
  c.size = 1000;
  c.packed = std::string(321, '\x7f');
  auto cm = element(c);
  CHECK(measure(cm).total() == caf_size(cm));
  CHECK(measure(cm).payload == 321);
}

TEST_CASE("payloads scale exactly, rounded to the nearest byte") {
  sim::payload_scale none;
  CHECK(none.identity());
  CHECK(none.apply(4000) == 4000);
  CHECK(none.ratio() == 1.0);
  sim::payload_scale ten{2351460, 235146};
  CHECK(!ten.identity());
  CHECK(ten.apply(4 * 235146) == 4 * 2351460);
  CHECK(ten.apply(4000) == 40000);
  CHECK(ten.ratio() == 10.0);
  sim::payload_scale half{3, 2};
  CHECK(half.apply(3) == 5); // 4.5 rounds up
  CHECK(half.apply(1) == 2); // 1.5
  CHECK(half.apply(2) == 3);
  // 10^12 / 1 parameters: a model's bytes times 10^12, saturated at 2^64.
  sim::payload_scale huge{1'000'000'000'000ULL, 1};
  CHECK(huge.apply(4) == 4'000'000'000'000ULL);
  CHECK(huge.apply(std::uint64_t{1} << 60)
        == std::numeric_limits<std::uint64_t>::max());
}

TEST_CASE("the links carry a scaled payload, its header as it is") {
  struct config : caf::actor_system_config {
    config() {
      messages::register_types(*this);
      sim::scheduler::install(*this);
    }
  };
  auto bytes_for = [](sim::payload_scale scale) {
    config cfg;
    caf::actor_system sys{cfg};
    sys.await_actors_before_shutdown(false);
    auto& sched = sim::scheduler::of(sys);
    sim::network_options net;
    net.gbps = 10;
    net.latency_us = 0;
    sched.configure(3, net, sim::compute_options{});
    sched.scale_payloads(scale);
    auto got = std::make_shared<sim::nanos>(-1);
    sched.place_next(2);
    auto sink = sys.spawn([got, &sched](caf::event_based_actor*) {
      return caf::behavior{
          [got, &sched](const messages::push_msg&) { *got = sched.elapsed(); }};
    });
    sched.place_next(1);
    sys.spawn([sink](caf::event_based_actor* self) {
      self->send(sink, push_of(125000)); // 500 kB of values
    });
    sched.run([got] { return *got >= 0; });
    auto out = std::make_pair(sched.network().bytes(), *got);
    CHECK(sched.stats().payload_bytes == scale.apply(500000));
    sched.shutdown();
    return out;
  };
  auto [plain, t1] = bytes_for({});
  auto [big, t10] = bytes_for({1250000, 125000});
  auto header = plain - 500000;
  CHECK(header >= 64);
  CHECK(header < 200);
  CHECK(big == header + 5'000'000);
  // 5 MB at 10 Gb/s: 4 ms instead of 0.4.
  INFO(t1 << " " << t10);
  CHECK(t10 - t1
        == sim::link_model::wire_time(big, 10)
               - sim::link_model::wire_time(plain, 10));
}

TEST_CASE("a request's reply crosses at its size: the parameter server's "
          "fetch reply is not free") {
  // CAF 0.17 saves a reply (built from type-erased values) only with a
  // context; without one the counter fell back to 64 header bytes, and
  // every fetch reply crossed for nothing (docs/simulation.md, stop 54).
  test::sim_system s{3, sim::compute_options{}};
  auto& sys = s.sys;
  auto& sched = s.sched;
  const std::size_t n = 50000;
  sched.place_next(2);
  auto server = sys.spawn([n](caf::event_based_actor*) {
    return caf::behavior{[n](const messages::fetch_msg&) {
      messages::params_msg reply;
      reply.values = messages::tensor{std::vector<float>(n, 0.25f)};
      return reply;
    }};
  });
  auto got = std::make_shared<std::size_t>(0);
  sched.place_next(1);
  sys.spawn([server, got, n](caf::event_based_actor* self) {
    self->request(server, caf::infinite, messages::fetch_msg{0, 0, n, 0})
        .then([got](const messages::params_msg& p) { *got = p.values.size(); });
  });
  sched.run([got] { return *got > 0; });
  CHECK(*got == n);
  // The reply's values, and nothing else, are payload.
  CHECK(sched.stats().payload_bytes == 4 * n);
  CHECK(sched.network().bytes() > 4 * n);
}
