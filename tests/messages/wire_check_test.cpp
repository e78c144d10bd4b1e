// What the guard lets through reaches CAF 0.17.6's decoder, and whatever a
// troupe actor passes on (an error it received, as a worker's exit reason
// to its coordinator) reaches CAF's encoder, which never returns on a bare
// infinite float or double (caf/detail/ieee_754.hpp, pack754). So a payload
// naming a bare float, double or long double element at any depth (an
// error's context included) is refused; troupe's own messages carry doubles
// as bit patterns and pass, whatever their values.

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/message.hpp>
#include <catch2/catch.hpp>

#include "messages/consensus.hpp"
#include "messages/registry.hpp"
#include "messages/wire_check.hpp"

using namespace troupe::messages;

namespace {

struct system_fixture {
  caf::actor_system_config cfg;
  caf::actor_system sys;
  system_fixture() : sys{(register_types(cfg), cfg)} {}

  /// The bytes BASP would carry for `msg`.
  std::vector<unsigned char> bytes_of(const caf::message& msg) {
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    auto copy = msg;
    REQUIRE(!sink(copy));
    return {buf.begin(), buf.end()};
  }

  std::string verdict(const caf::message& msg, bool complete = true) {
    auto b = bytes_of(msg);
    return unsafe_payload(b.data(), b.size(), complete);
  }
};

caf::error peer_error(caf::message context) {
  return caf::error{static_cast<std::uint8_t>(1), caf::atom("system"),
                    std::move(context)};
}

} // namespace

TEST_CASE_METHOD(system_fixture,
                 "a payload naming a bare float, double or long double is "
                 "refused, nested in an error's context too") {
  // Finite values are serialized here; the peer's bytes would decode to
  // the infinity that makes CAF's encoder loop when passed on.
  for (const auto& msg :
       {caf::make_message(1.5f), caf::make_message(std::string{"x"}, 2.5),
        caf::make_message(static_cast<long double>(1)),
        caf::make_message(peer_error(caf::make_message(1.5f))),
        caf::make_message(caf::atom("x"), peer_error(caf::make_message(
                                              std::string{"y"}, 0.5)))}) {
    INFO(to_string(msg));
    auto why = verdict(msg);
    CHECK(why.find("floating-point") != std::string::npos);
  }
}

TEST_CASE_METHOD(system_fixture,
                 "troupe's own messages pass with any double value, and "
                 "plain errors pass") {
  using lim = std::numeric_limits<double>;
  for (auto v : {lim::infinity(), -lim::infinity(), lim::quiet_NaN(), 0.1}) {
    lead_msg lead;
    lead.lambda = v;
    CHECK(verdict(caf::make_message(lead)).empty());
    CHECK(verdict(caf::make_message(lead), false).empty());
  }
  CHECK(verdict(caf::make_message(peer_error(
                    caf::make_message(std::string{"float double"}, 3))))
            .empty());
  CHECK(verdict(caf::make_message(std::int32_t{1}, true)).empty());
}
