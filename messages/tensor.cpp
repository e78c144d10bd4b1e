#include "messages/tensor.hpp"

#include <cstring>
#include <limits>

#include <caf/binary_deserializer.hpp>
#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/sec.hpp>
#include <caf/serializer.hpp>

namespace troupe::messages {

static_assert(sizeof(float) == 4 && std::numeric_limits<float>::is_iec559,
              "the wire format assumes IEEE-754 binary32 floats");
static_assert(
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
    "raw tensor blocks are host byte order, documented little-endian");

bool operator==(const tensor& x, const tensor& y) noexcept {
  return x.size() == y.size()
         && (x.empty()
             || std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
}

caf::error inspect(caf::serializer& f, tensor& x) {
  auto count = static_cast<std::uint64_t>(x.size());
  if (auto err = f(count))
    return err;
  if (count == 0)
    return caf::none;
  return f.apply_raw(x.size() * sizeof(float), x.data());
}

caf::error inspect(caf::deserializer& f, tensor& x) {
  std::uint64_t count = 0;
  if (auto err = f(count))
    return err;
  if (count > tensor::max_size)
    return caf::make_error(caf::sec::invalid_argument,
                           "tensor element count above tensor::max_size",
                           count);
  // BASP decodes from a binary_deserializer, which knows how many bytes are
  // left: a count that cannot be satisfied fails before any allocation.
  if (auto* bin = dynamic_cast<caf::binary_deserializer*>(&f))
    if (count * sizeof(float) > bin->remaining())
      return caf::make_error(caf::sec::invalid_argument,
                             "tensor element count above remaining bytes",
                             count);
  x.values().resize(static_cast<std::size_t>(count));
  if (count == 0)
    return caf::none;
  return f.apply_raw(x.size() * sizeof(float), x.data());
}

std::string to_string(const tensor& x) {
  constexpr std::size_t shown = 4;
  std::string result = "tensor(size=";
  result += std::to_string(x.size());
  if (!x.empty()) {
    result += ", [";
    for (std::size_t i = 0; i < x.size() && i < shown; ++i) {
      if (i > 0)
        result += ", ";
      result += std::to_string(x[i]);
    }
    if (x.size() > shown)
      result += ", ...";
    result += ']';
  }
  result += ')';
  return result;
}

} // namespace troupe::messages
