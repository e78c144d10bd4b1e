// A tensor as BASP delivers it: the bytes after a message's type name, read
// by a binary_deserializer. Contract: accepted input is an element count and
// exactly that many raw floats, which serialize back to the same bytes, or
// the same after a shared-memory offer (count with bit 62 set, then pid, fd
// and nonce: 16 bytes), which serializes back without the offer; a
// reference (bit 63) names no segment this process proved and is refused;
// refused input fails with a caf::error and allocates nothing it cannot
// fill (libFuzzer's -malloc_limit_mb catches that).

#include <cstring>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/error.hpp>

#include "messages/tensor.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using troupe::messages::tensor;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  auto bytes = reinterpret_cast<const char*>(data);
  tensor x;
  caf::binary_deserializer source{nullptr, bytes, size};
  if (auto err = source(x))
    return 0;
  FUZZ_CHECK(x.size() <= tensor::max_size, "count above max_size accepted");
  auto consumed = size - source.remaining();
  // The count is big-endian on the wire: its top byte holds the flags.
  FUZZ_CHECK((data[0] & 0x80) == 0, "a reference to an unproved segment");
  std::size_t offer = (data[0] & 0x40) != 0 ? 16 : 0;
  FUZZ_CHECK(consumed == 8 + offer + 4 * x.size(),
             "consumed bytes != 8 + offer + 4 * count");
  std::vector<char> again;
  caf::binary_serializer sink{nullptr, again};
  FUZZ_CHECK(!sink(x), "an accepted tensor does not serialize");
  FUZZ_CHECK(again.size() == consumed - offer
                 && static_cast<std::uint8_t>(again[0]) == (data[0] & 0x3f)
                 && std::memcmp(again.data() + 1, bytes + 1, 7) == 0
                 && std::memcmp(again.data() + 8, bytes + 8 + offer,
                                consumed - 8 - offer)
                        == 0,
             "round trip changes the count or the values");
  return 0;
}
