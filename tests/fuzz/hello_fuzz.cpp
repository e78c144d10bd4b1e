// What a peer sends before and while it joins: a hello_msg on its own (the
// join request's payload) or, with the first byte odd, a whole caf::message
// of any registered type as BASP decodes it (join_atom, hello_msg and actor
// handle included). Contract: accepted input serializes, reads back and
// serializes again to the same bytes; a hello's log line never shows its
// token; refused input fails with a caf::error. A message is decoded only if
// the guard would forward its bytes (messages::unsafe_payload): what it
// forwards must not make CAF throw, which would end a node.

#include <cmath>
#include <memory>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/error.hpp>
#include <caf/message.hpp>

#include "messages/messages.hpp"
#include "messages/registry.hpp"
#include "messages/wire_check.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

caf::actor_system& sys() {
  static auto* cfg = [] {
    auto* c = new caf::actor_system_config;
    troupe::messages::register_types(*c);
    c->set("scheduler.max-threads", 1);
    return c;
  }();
  static auto* s = new caf::actor_system{*cfg};
  return *s;
}

template <class T>
std::vector<char> serialize(T& x) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys(), buf};
  FUZZ_CHECK(!sink(x), "an accepted value does not serialize");
  return buf;
}

/// Serializing, reading back and serializing again is a fixed point.
template <class T>
T round_trip(T& x) {
  auto once = serialize(x);
  T back;
  caf::binary_deserializer reread{sys(), once};
  FUZZ_CHECK(!reread(back) && reread.remaining() == 0,
             "a serialized value does not read back");
  FUZZ_CHECK(serialize(back) == once, "round trip changes the bytes");
  return back;
}

/// Whether `msg` holds a bare non-finite float or double, at any depth. CAF
/// 0.17.6's float encoder (caf/detail/ieee_754.hpp, pack754) loops forever on
/// +-inf, so such a message cannot be serialized again, and a troupe actor
/// passes on errors it received; the guard refuses every bare float or
/// double (messages::unsafe_payload), troupe's own messages carry doubles
/// as bit patterns (messages::real, messages::as_bits).
bool caf_cannot_encode(const caf::message& msg) {
  for (size_t i = 0; i < msg.size(); ++i) {
    if (msg.match_element<double>(i) && !std::isfinite(msg.get_as<double>(i)))
      return true;
    if (msg.match_element<float>(i) && !std::isfinite(msg.get_as<float>(i)))
      return true;
    // Nested: a message, or an error's context.
    if (msg.match_element<caf::message>(i)
        && caf_cannot_encode(msg.get_as<caf::message>(i)))
      return true;
    // (context() of an empty error dereferences null in CAF 0.17.6.)
    if (msg.match_element<caf::error>(i) && msg.get_as<caf::error>(i)
        && caf_cannot_encode(msg.get_as<caf::error>(i).context()))
      return true;
  }
  return false;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  if (size == 0)
    return 0;
  auto bytes = reinterpret_cast<const char*>(data) + 1;
  caf::binary_deserializer source{sys(), bytes, size - 1};
  if (data[0] & 1) {
    if (!troupe::messages::unsafe_payload(data + 1, size - 1, true).empty())
      return 0;
    caf::message msg;
    if (source(msg))
      return 0;
    FUZZ_CHECK(!caf_cannot_encode(msg),
               "the guard forwards a message CAF cannot send on (a bare "
               "non-finite float or double)");
    round_trip(msg);
    return 0;
  }
  troupe::messages::hello_msg hello;
  if (source(hello))
    return 0;
  FUZZ_CHECK(round_trip(hello) == hello, "round trip changes the hello");
  // The token never shows: any other non-empty token prints the same.
  auto other = hello;
  other.token = hello.token == "x" ? "y" : "x";
  FUZZ_CHECK(hello.token.empty() || to_string(hello) == to_string(other),
             "to_string(hello_msg) shows the token");
  return 0;
}
