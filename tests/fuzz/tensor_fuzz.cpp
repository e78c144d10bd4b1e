// A tensor as BASP delivers it: the bytes after a message's type name, read
// by a binary_deserializer. Contract: accepted input is an element count and
// exactly that many raw floats, which serialize back to the same bytes;
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
  FUZZ_CHECK(consumed == 8 + 4 * x.size(), "consumed bytes != 8 + 4 * count");
  std::vector<char> again;
  caf::binary_serializer sink{nullptr, again};
  FUZZ_CHECK(!sink(x), "an accepted tensor does not serialize");
  FUZZ_CHECK(again.size() == consumed
                 && std::memcmp(again.data(), bytes, consumed) == 0,
             "round trip changes the bytes");
  return 0;
}
