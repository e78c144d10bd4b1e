#include "sim/size_counter.hpp"

#include <iomanip>
#include <limits>
#include <sstream>
#include <typeinfo>

#include <caf/actor_system.hpp>
#include <caf/scoped_execution_unit.hpp>
#include <caf/type_erased_tuple.hpp>

#include "messages/compressed.hpp"
#include "messages/gossip.hpp"

namespace troupe::sim {

namespace {

/// Bytes of CAF 0.17's varbyte encoding of a sequence length (as a
/// uint32, as CAF writes it).
std::size_t varbyte_size(std::size_t n) noexcept {
  auto x = static_cast<std::uint32_t>(n);
  std::size_t bytes = 1;
  while (x > 0x7f) {
    ++bytes;
    x >>= 7;
  }
  return bytes;
}

/// The packed block of a compressed message or of Gaia's significant
/// changes at `pos` of `content` (0 if the element is neither).
std::uint64_t packed_bytes(const caf::type_erased_tuple& content,
                           std::size_t pos) {
  const auto* type = content.type(pos).second;
  if (type == nullptr)
    return 0;
  if (*type == typeid(messages::compressed_push_msg))
    return static_cast<const messages::compressed_push_msg*>(content.get(pos))
        ->packed.size();
  if (*type == typeid(messages::compressed_gossip_msg))
    return static_cast<const messages::compressed_gossip_msg*>(content.get(pos))
        ->packed.size();
  if (*type == typeid(messages::mirror_msg))
    return static_cast<const messages::mirror_msg*>(content.get(pos))
        ->packed.size();
  return 0;
}

} // namespace

caf::error size_counter::fixed(std::size_t n) noexcept {
  size_.header += n;
  counted_ = false;
  return caf::none;
}

caf::error size_counter::begin_object(std::uint16_t& nr, std::string& name) {
  if (nr != 0)
    return apply(nr);
  if (auto err = apply(nr))
    return err;
  return apply(name);
}

caf::error size_counter::end_object() {
  return caf::none;
}

caf::error size_counter::begin_sequence(std::size_t& list_size) {
  return fixed(varbyte_size(list_size));
}

caf::error size_counter::end_sequence() {
  return caf::none;
}

caf::error size_counter::apply_raw(std::size_t num_bytes, void*) {
  // A tensor: its element count, then 4 bytes per element.
  if (counted_ && num_bytes > 0 && num_bytes % sizeof(float) == 0
      && count_ == num_bytes / sizeof(float)) {
    size_.payload += num_bytes;
    counted_ = false;
    return caf::none;
  }
  return fixed(num_bytes);
}

caf::error size_counter::apply_impl(std::int8_t& x) {
  return fixed(sizeof(x));
}

caf::error size_counter::apply_impl(std::uint8_t& x) {
  return fixed(sizeof(x));
}

caf::error size_counter::apply_impl(std::int16_t& x) {
  return fixed(sizeof(x));
}

caf::error size_counter::apply_impl(std::uint16_t& x) {
  return fixed(sizeof(x));
}

caf::error size_counter::apply_impl(std::int32_t& x) {
  return fixed(sizeof(x));
}

caf::error size_counter::apply_impl(std::uint32_t& x) {
  return fixed(sizeof(x));
}

caf::error size_counter::apply_impl(std::int64_t& x) {
  return fixed(sizeof(x));
}

caf::error size_counter::apply_impl(std::uint64_t& x) {
  fixed(sizeof(x));
  count_ = x;
  counted_ = true;
  return caf::none;
}

caf::error size_counter::apply_impl(float& x) {
  return fixed(sizeof(x));
}

caf::error size_counter::apply_impl(double& x) {
  return fixed(sizeof(x));
}

caf::error size_counter::apply_impl(long double& x) {
  // CAF writes a long double as its text (as serialized_size counts it).
  std::ostringstream out;
  out << std::setprecision(std::numeric_limits<long double>::digits) << x;
  auto text = out.str();
  return apply_impl(text);
}

caf::error size_counter::apply_impl(std::string& x) {
  return fixed(varbyte_size(x.size()) + x.size());
}

caf::error size_counter::apply_impl(std::u16string& x) {
  return fixed(varbyte_size(x.size()) + x.size() * sizeof(std::uint16_t));
}

caf::error size_counter::apply_impl(std::u32string& x) {
  return fixed(varbyte_size(x.size()) + x.size() * sizeof(std::uint32_t));
}

message_size measure(const caf::type_erased_tuple& content,
                     caf::actor_system* sys) {
  size_counter f{sys ? sys->dummy_execution_unit() : nullptr};
  if (content.save(f))
    return {64, 0};
  auto size = f.result();
  // A compressed block is a tensor's values packed: payload too.
  for (std::size_t i = 0; i < content.size(); ++i) {
    auto packed = packed_bytes(content, i);
    if (packed > size.header)
      packed = size.header;
    size.header -= packed;
    size.payload += packed;
  }
  return size;
}

std::uint64_t payload_scale::apply(std::uint64_t bytes) const noexcept {
  if (identity())
    return bytes;
  __extension__ typedef unsigned __int128 wide;
  wide x = static_cast<wide>(bytes) * virtual_params + real_params / 2;
  x /= real_params;
  constexpr auto most = std::numeric_limits<std::uint64_t>::max();
  return x > most ? most : static_cast<std::uint64_t>(x);
}

double payload_scale::ratio() const noexcept {
  return identity() ? 1.0
                    : static_cast<double>(virtual_params)
                          / static_cast<double>(real_params);
}

} // namespace troupe::sim
