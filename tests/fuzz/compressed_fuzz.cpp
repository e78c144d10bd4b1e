// A compressed push as a shard receives it: the message decoded by a
// binary_deserializer, then its packed block decoded into the range it
// claims (bounded here, as the shard bounds it by its own range). Contract:
// the message round-trips; the block either decodes to finite values or
// throws std::invalid_argument; nothing else escapes.

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/error.hpp>

#include "messages/compressed.hpp"
#include "optim/compress.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

/// Largest range decoded per input (a shard's range is its own size).
constexpr std::uint64_t max_values = 1 << 16;

template <class T>
std::vector<char> serialize(T& x) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  FUZZ_CHECK(!sink(x), "an accepted message does not serialize");
  return buf;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  troupe::messages::compressed_push_msg msg;
  caf::binary_deserializer source{nullptr, reinterpret_cast<const char*>(data),
                                  size};
  if (source(msg))
    return 0;
  // Serializing, reading back and serializing again is a fixed point.
  auto once = serialize(msg);
  troupe::messages::compressed_push_msg back;
  caf::binary_deserializer reread{nullptr, once};
  FUZZ_CHECK(!reread(back) && reread.remaining() == 0,
             "a serialized message does not read back");
  FUZZ_CHECK(serialize(back) == once, "round trip changes the message");
  auto n = static_cast<std::size_t>(std::min(msg.size, max_values));
  std::vector<float> dense(n, 1.0f);
  try {
    troupe::optim::decompress(msg.packed, dense.data(), n);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  for (auto v : dense)
    FUZZ_CHECK(std::isfinite(v), "a decoded value is not finite");
  return 0;
}
