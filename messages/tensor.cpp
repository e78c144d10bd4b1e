#include "messages/tensor.hpp"

#include <cstring>
#include <limits>
#include <string>

#include <caf/binary_deserializer.hpp>
#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/sec.hpp>
#include <caf/serializer.hpp>

#include "messages/shm.hpp"

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

namespace {

constexpr std::uint64_t ref_bit = std::uint64_t{1} << 63;
constexpr std::uint64_t offer_bit = std::uint64_t{1} << 62;

caf::error refused(const std::string& why) {
  return caf::make_error(caf::sec::invalid_argument,
                         "tensor in shared memory: " + why);
}

} // namespace

caf::error inspect(caf::serializer& f, tensor& x) {
  auto count = static_cast<std::uint64_t>(x.size());
  const auto& channel = x.shared_with();
  if (channel && count > 0) {
    shm::block_ref r;
    if (shm::confirmed(*channel)
        && shm::write(*channel, x.data(), count * sizeof(float), r)) {
      auto field = count | ref_bit;
      return f(field, r.segment.pid, r.segment.fd, r.segment.nonce, r.offset,
               r.generation);
    }
    shm::count_inline();
    auto id = shm::id_of(*channel);
    auto field = count | offer_bit;
    if (auto err = f(field, id.pid, id.fd, id.nonce))
      return err;
    return f.apply_raw(x.size() * sizeof(float), x.data());
  }
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
  auto flags = count & (ref_bit | offer_bit);
  count &= ~(ref_bit | offer_bit);
  if (flags == (ref_bit | offer_bit))
    return refused("a reference and an offer at once");
  if (count > tensor::max_size)
    return caf::make_error(caf::sec::invalid_argument,
                           "tensor element count above tensor::max_size",
                           count);
  if (flags != 0) {
    shm::block_ref r;
    if (auto err = f(r.segment.pid, r.segment.fd, r.segment.nonce))
      return err;
    if (flags == ref_bit) {
      if (auto err = f(r.offset, r.generation))
        return err;
      r.bytes = count * sizeof(float);
      auto why = shm::read(r, [&]() -> void* {
        x.values().resize(static_cast<std::size_t>(count));
        return x.data();
      });
      if (!why.empty())
        return refused(why);
      if (count == 0) // read() wrote nothing, so never sized the tensor
        x.values().clear();
      return caf::none;
    }
    // An offer: the values follow inline either way.
    shm::accept_offer(r.segment);
  }
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
