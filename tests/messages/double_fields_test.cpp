// Double fields of messages cross the wire as bit patterns (messages::real,
// messages::as_bits): CAF 0.17.6's float encoder turns NaN into 1.0 and
// loops forever on +-inf (found by tests/fuzz/hello_fuzz.cpp as a hang).

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <catch2/catch.hpp>

#include "messages/compressed.hpp"
#include "messages/consensus.hpp"
#include "messages/gossip.hpp"

using namespace troupe::messages;

namespace {

std::uint64_t bits_of(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

template <class T>
T round_trip(T x) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  REQUIRE(!sink(x));
  T y;
  caf::binary_deserializer source{nullptr, buf};
  REQUIRE(!source(y));
  CHECK(source.remaining() == 0);
  return y;
}

/// Values CAF's encoder changes (NaN with a payload, -0, the smallest
/// denormal) or, for infinities, never returns from.
std::vector<double> hard_values() {
  using lim = std::numeric_limits<double>;
  double payload_nan;
  std::uint64_t b = 0x7ff8000000001234u;
  std::memcpy(&payload_nan, &b, sizeof b);
  return {payload_nan, lim::infinity(),   -lim::infinity(),
          -0.0,        lim::denorm_min(), 0.1};
}

} // namespace

TEST_CASE("double fields of gossip, compressed gossip, lead and pull "
          "messages keep their bits") {
  for (auto v : hard_values()) {
    INFO("bits " << bits_of(v));
    gossip_msg g;
    g.weight = v;
    CHECK(bits_of(round_trip(g).weight) == bits_of(v));
    compressed_gossip_msg c;
    c.weight = v;
    c.fraction = v;
    auto c2 = round_trip(c);
    CHECK(bits_of(c2.weight) == bits_of(v));
    CHECK(bits_of(c2.fraction) == bits_of(v));
    lead_msg l;
    l.lambda = v;
    CHECK(bits_of(round_trip(l).lambda) == bits_of(v));
    pull_msg p;
    p.lambda = v;
    CHECK(bits_of(round_trip(p).lambda) == bits_of(v));
  }
}
