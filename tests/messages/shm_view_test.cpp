// One copy per side on the same-host fast path (issue [14]): a sender's
// tensor written straight into its destination's segment (shared_copy) is
// sent by reference without another copy, and its block is not reused while
// that tensor lives; a params_msg's values stay in the segment (a view) until
// the receiver copies them out, and any other tensor owns its values once
// deserialized. The copy counters add up to one copy each side.

#include <cstdint>
#include <cstring>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/node_id.hpp>
#include <catch2/catch.hpp>

#include "messages/messages.hpp"
#include "messages/shm.hpp"
#include "messages/tensor.hpp"

using namespace troupe::messages;

namespace {

const bool turned_on = (shm::set_enabled(true), true);

caf::node_id fake_node(std::uint32_t n) {
  caf::node_id::default_data::host_id_type host{};
  host[0] = static_cast<std::uint8_t>(n);
  host[1] = 0x5d;
  return caf::make_node_id(4100000 + n, host);
}

template <class T>
std::vector<char> serialize(T& x) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  REQUIRE(!sink(x));
  return buf;
}

template <class T>
std::string deserialize(const std::vector<char>& buf, T& out) {
  caf::binary_deserializer source{nullptr, buf};
  auto err = source(out);
  return err ? caf::to_string(err) : std::string{};
}

std::vector<float> ramp(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>(i) + 0.5f;
  return v;
}

constexpr std::size_t ref_frame_bytes = 8 + 4 + 4 + 8 + 8 + 4;

/// A channel whose reader (this process) proved it maps the segment.
std::shared_ptr<shm::channel> proved_channel(std::uint32_t n) {
  auto c = shm::channel_to(fake_node(n));
  REQUIRE(c);
  auto x = tensor::shared_copy(c, ramp(4, 1).data(), 4);
  CHECK_FALSE(x.is_view()); // not proved yet: its own memory, an offer
  tensor y;
  REQUIRE(deserialize(serialize(x), y).empty());
  REQUIRE(shm::confirmed(*c));
  return c;
}

} // namespace

TEST_CASE("a sender's shared copy goes straight into the segment and is "
          "sent by reference without another copy",
          "[messages][shm]") {
  REQUIRE(turned_on);
  auto c = proved_channel(1);
  auto v = ramp(50000, 0.125f);
  auto before = copies();
  auto x = tensor::shared_copy(c, v.data(), v.size());
  CHECK(x.is_view());
  CHECK(std::memcmp(std::as_const(x).data(), v.data(), v.size() * 4) == 0);
  auto frame = serialize(x);
  CHECK(frame.size() == ref_frame_bytes);
  auto mid = copies();
  // The sender's side: one copy, into the segment.
  CHECK(mid.into_segment - before.into_segment == v.size() * 4);
  CHECK(mid.into_tensor == before.into_tensor);
  CHECK(mid.serialized == before.serialized);
  tensor y; // not a params_msg: owns its values once deserialized
  REQUIRE(deserialize(frame, y).empty());
  CHECK_FALSE(y.is_view());
  CHECK(y == tensor{v});
  // Sent again (as a kept push sent to a shard's new handle): a reference
  // to a block of its own, copied from the first, which the lease still
  // holds though the reader freed it.
  auto again = serialize(x);
  CHECK(again.size() == ref_frame_bytes);
  CHECK(again != frame);
  CHECK(copies().into_segment - mid.into_segment == v.size() * 4);
  tensor z;
  REQUIRE(deserialize(again, z).empty());
  CHECK(z == tensor{v});
  // To another node's channel (a shard moved): inline, with an offer.
  x.share_with(shm::channel_to(fake_node(9)));
  auto other = serialize(x);
  CHECK(other.size() == 8 + 16 + v.size() * 4);
}

TEST_CASE("a leased block is not reused while its tensor lives",
          "[messages][shm]") {
  auto c = proved_channel(2);
  // 6 MiB each: the 64 MiB segment holds about ten.
  auto v = ramp(6u << 18, 0.5f);
  std::vector<tensor> held;
  for (int i = 0; i < 14; ++i) {
    held.push_back(tensor::shared_copy(c, v.data(), v.size()));
    tensor y;
    REQUIRE(deserialize(serialize(held.back()), y).empty()); // read, freed
  }
  std::size_t views = 0;
  for (auto& t : held) {
    views += t.is_view() ? 1 : 0;
    CHECK(t == tensor{v}); // no block was written over
  }
  CHECK(views >= 8);
  CHECK(views <= 10); // the rest fell back to their own memory
  held.clear();
  // Let go: the ring is free again.
  auto x = tensor::shared_copy(c, v.data(), v.size());
  CHECK(x.is_view());
}

TEST_CASE("a params_msg's values stay in the segment until copied out, "
          "once",
          "[messages][shm]") {
  auto c = proved_channel(3);
  auto v = ramp(30000, -0.25f);
  params_msg p;
  p.version = 7;
  p.offset = 100;
  p.values = tensor::shared_copy(c, v.data(), v.size());
  auto frame = serialize(p);
  CHECK(frame.size() == 8 + 8 + ref_frame_bytes);
  auto before = copies();
  params_msg q;
  REQUIRE(deserialize(frame, q).empty());
  CHECK(q.version == 7);
  CHECK(q.offset == 100);
  CHECK(q.values.is_view());
  CHECK(q.values.size() == v.size());
  // A replay of the reference while the view holds the block is refused.
  params_msg replay;
  auto why = deserialize(frame, replay);
  CHECK(why.find("does not hold it") != std::string::npos);
  // The receiver's side: one copy, from the segment into the model.
  std::vector<float> model(v.size() + 100, 0.0f);
  q.values.copy_to(model.data() + q.offset);
  CHECK(std::memcmp(model.data() + 100, v.data(), v.size() * 4) == 0);
  auto after = copies();
  CHECK(after.copied_out - before.copied_out == v.size() * 4);
  CHECK(after.from_segment == before.from_segment);
  CHECK(after.deserialized == before.deserialized);
  // A non-const access copies the view into the tensor's own memory.
  float* mine = q.values.data();
  CHECK_FALSE(q.values.is_view());
  CHECK(std::memcmp(mine, v.data(), v.size() * 4) == 0);
  CHECK(copies().from_segment - after.from_segment == v.size() * 4);
  // The block went with the view: the same frame is refused now too.
  params_msg late;
  CHECK_FALSE(deserialize(frame, late).empty());
}
