// The simulator's network (sim/link_model.hpp): serialization at the link
// rate, latency per switch, queueing at a busy NIC (incast) and at an
// oversubscribed core, order kept between a pair of nodes.

#include <catch2/catch.hpp>

#include "sim/link_model.hpp"

using troupe::sim::link_model;
using troupe::sim::nanos;
using troupe::sim::network_options;

namespace {

network_options plain(double gbps, double latency_us) {
  network_options o;
  o.gbps = gbps;
  o.latency_us = latency_us;
  o.header_bytes = 0;
  return o;
}

} // namespace

TEST_CASE("a message takes its bytes at the link rate plus a switch's "
          "latency") {
  link_model net{plain(10, 5), 4};
  // 1250 bytes = 10^4 bits = 1 us at 10 Gb/s.
  CHECK(net.deliver(0, 1, 2, 1250) == 1000 + 5000);
  CHECK(link_model::wire_time(1250, 10) == 1000);
  CHECK(link_model::wire_time(1, 10) == 1); // 0.8 ns, rounded up
  // To itself: free.
  CHECK(net.deliver(77, 3, 3, 1 << 20) == 77);
  CHECK(net.bytes() == 1250);
}

TEST_CASE("messages to one node queue at its receiving NIC (incast)") {
  link_model net{plain(10, 5), 5};
  for (std::uint32_t s = 1; s <= 4; ++s)
    CHECK(net.deliver(0, s, 0, 1250) == 1000 * s + 5000);
  CHECK(net.max_queueing() == 3000);
  // A node's sends queue at its transmitting NIC.
  link_model out{plain(10, 5), 5};
  for (std::uint32_t d = 1; d <= 4; ++d)
    CHECK(out.deliver(0, 0, d, 1250) == 1000 * d + 5000);
}

TEST_CASE("across racks a message crosses the core, shared by the rack") {
  auto o = plain(10, 5);
  o.rack_size = 2;
  o.oversubscription = 2; // the uplink: 2 x 10 / 2 = 10 Gb/s
  link_model net{o, 4};
  CHECK(net.rack_of(1) == 0);
  CHECK(net.rack_of(2) == 1);
  // In a rack: one switch.
  CHECK(net.deliver(0, 0, 1, 1250) == 6000);
  // Across: three switches; two senders of rack 0 share its uplink.
  link_model core{o, 4};
  CHECK(core.deliver(0, 0, 2, 1250) == 1000 + 15000);
  CHECK(core.deliver(0, 1, 3, 1250) == 2000 + 15000);
  CHECK(core.core_bytes() == 2500);
  // Without oversubscription the uplink (20 Gb/s) sends each in half the
  // time: the second waits 0.5 us for it, not 1 us (messages, not packets,
  // are what queue).
  o.oversubscription = 1;
  link_model full{o, 4};
  CHECK(full.deliver(0, 0, 2, 1250) == 16000);
  CHECK(full.deliver(0, 1, 3, 1250) == 16500);
}

TEST_CASE("between two nodes a later message never arrives first") {
  link_model net{plain(1, 50), 2};
  nanos big = net.deliver(0, 0, 1, 1'000'000);
  nanos small = net.deliver(1, 0, 1, 10);
  CHECK(small >= big);
  CHECK(big == 8'000'000 + 50'000);
}

TEST_CASE("the network's settings are checked, naming the flag") {
  auto bad = [](auto edit, const char* says) {
    network_options o;
    edit(o);
    CHECK_THROWS_WITH(troupe::sim::validate(o), Catch::Contains(says));
  };
  bad([](network_options& o) { o.gbps = 0; }, "--link-gbps");
  bad([](network_options& o) { o.gbps = std::nan(""); }, "--link-gbps");
  bad([](network_options& o) { o.latency_us = -1; }, "--latency-us");
  bad([](network_options& o) { o.oversubscription = 0.5; },
      "--oversubscription");
}
