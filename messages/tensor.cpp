#include "messages/tensor.hpp"

#include <atomic>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

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

namespace {

struct copy_totals {
  std::atomic<std::uint64_t> into_tensor{0}, into_segment{0}, serialized{0},
      deserialized{0}, from_segment{0}, copied_out{0};
};

copy_totals& totals() {
  static copy_totals t;
  return t;
}

std::uint64_t bytes_of(std::size_t n) {
  return static_cast<std::uint64_t>(n) * sizeof(float);
}

} // namespace

copy_counters copies() noexcept {
  auto& t = totals();
  copy_counters c;
  c.into_tensor = t.into_tensor;
  c.into_segment = t.into_segment;
  c.serialized = t.serialized;
  c.deserialized = t.deserialized;
  c.from_segment = t.from_segment;
  c.copied_out = t.copied_out;
  return c;
}

tensor::tensor(const float* data, std::size_t size)
    : values_(data, data + size) {
  totals().into_tensor += bytes_of(size);
}

tensor tensor::shared_copy(std::shared_ptr<shm::channel> c, const float* data,
                           std::size_t size) {
  if (c && size > 0) {
    const void* where = nullptr;
    if (auto h = shm::lease(c, data, bytes_of(size), where)) {
      tensor t;
      t.set_view(static_cast<const float*>(where), size, std::move(h));
      t.share_with(std::move(c));
      totals().into_segment += bytes_of(size);
      return t;
    }
  }
  tensor t{data, size};
  t.share_with(std::move(c));
  return t;
}

void tensor::own() {
  if (!view_)
    return;
  values_.assign(view_data_, view_data_ + view_size_);
  totals().from_segment += bytes_of(view_size_);
  view_.reset();
  view_data_ = nullptr;
  view_size_ = 0;
}

void tensor::copy_to(float* dest) const noexcept {
  auto n = size();
  if (n == 0)
    return;
  std::memcpy(dest, data(), bytes_of(n));
  totals().copied_out += bytes_of(n);
}

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
  const float* values = std::as_const(x).data();
  if (channel && count > 0) {
    shm::block_ref r;
    bool sent = x.is_view() && shm::ship(*x.view_keeper(), *channel, r);
    if (!sent && shm::confirmed(*channel)
        && shm::write(*channel, values, bytes_of(count), r)) {
      totals().into_segment += bytes_of(count);
      sent = true;
    }
    if (sent) {
      auto field = count | ref_bit;
      return f(field, r.segment.pid, r.segment.fd, r.segment.nonce, r.offset,
               r.generation);
    }
    shm::count_inline();
    auto id = shm::id_of(*channel);
    auto field = count | offer_bit;
    if (auto err = f(field, id.pid, id.fd, id.nonce))
      return err;
    totals().serialized += bytes_of(count);
    return f.apply_raw(bytes_of(count), const_cast<float*>(values));
  }
  if (auto err = f(count))
    return err;
  if (count == 0)
    return caf::none;
  totals().serialized += bytes_of(count);
  return f.apply_raw(bytes_of(count), const_cast<float*>(values));
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
      r.bytes = bytes_of(count);
      std::shared_ptr<const shm::hold> h;
      const void* where = nullptr;
      auto why = shm::take(r, h, where);
      if (!why.empty())
        return refused(why);
      x.set_view(static_cast<const float*>(where),
                 static_cast<std::size_t>(count), std::move(h));
      // Kept in the segment only where the receiver copies it out.
      if (!x.view_allowed() || count == 0)
        x.own();
      return caf::none;
    }
    // An offer: the values follow inline either way.
    shm::accept_offer(r.segment);
  }
  // BASP decodes from a binary_deserializer, which knows how many bytes are
  // left: a count that cannot be satisfied fails before any allocation.
  if (auto* bin = dynamic_cast<caf::binary_deserializer*>(&f))
    if (bytes_of(count) > bin->remaining())
      return caf::make_error(caf::sec::invalid_argument,
                             "tensor element count above remaining bytes",
                             count);
  auto& v = x.values();
  v.resize(static_cast<std::size_t>(count));
  if (count == 0)
    return caf::none;
  totals().deserialized += bytes_of(count);
  return f.apply_raw(bytes_of(count), v.data());
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
