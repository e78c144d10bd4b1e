// The same-host fast path (messages/shm.hpp) without a network: one process
// plays writer and reader (it maps its own segment through /proc/self's
// pid, as a peer on the host would). A tensor first travels inline with an
// offer; once the reader proved the segment, as a reference, bit for bit;
// a replayed, forged or out-of-bounds reference is refused before anything
// is allocated; a full segment falls back to inline.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <unistd.h>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/node_id.hpp>
#include <catch2/catch.hpp>

#include "messages/shm.hpp"
#include "messages/tensor.hpp"

using namespace troupe::messages;

namespace {

/// The fast path is off by default: these tests turn it on.
const bool turned_on = (shm::set_enabled(true), true);

/// A node id of its own per test (a writer keeps one channel per node).
caf::node_id fake_node(std::uint32_t n) {
  caf::node_id::default_data::host_id_type host{};
  host[0] = static_cast<std::uint8_t>(n);
  host[1] = 0x7e;
  return caf::make_node_id(4000000 + n, host);
}

std::vector<char> serialize(tensor& x) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  REQUIRE(!sink(x));
  return buf;
}

/// Deserializes `buf`; the error's text, or "" on success.
std::string deserialize(const std::vector<char>& buf, tensor& out) {
  caf::binary_deserializer source{nullptr, buf};
  auto err = source(out);
  if (err)
    return caf::to_string(err);
  CHECK(source.remaining() == 0);
  return {};
}

std::vector<float> values(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>(i) - 1.5f;
  // Special values ride along: NaN with a payload, -0, a denormal, inf.
  std::uint32_t nan = 0x7fc12345u;
  std::memcpy(&v[0], &nan, 4);
  v[1] = -0.0f;
  v[2] = std::numeric_limits<float>::denorm_min();
  v[3] = std::numeric_limits<float>::infinity();
  return v;
}

bool same_bits(const tensor& x, const std::vector<float>& v) {
  return x.size() == v.size()
         && std::memcmp(x.data(), v.data(), v.size() * 4) == 0;
}

/// Fields of a reference frame: count|flags, pid, fd, nonce, offset, gen.
struct ref_frame {
  std::uint64_t field;
  std::uint32_t pid, fd;
  std::uint64_t nonce, offset;
  std::uint32_t generation;
};

ref_frame parse_ref(const std::vector<char>& buf) {
  ref_frame r{};
  caf::binary_deserializer source{nullptr, buf};
  REQUIRE(!source(r.field, r.pid, r.fd, r.nonce, r.offset, r.generation));
  return r;
}

std::vector<char> make_ref(const ref_frame& r) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  auto copy = r;
  REQUIRE(!sink(copy.field, copy.pid, copy.fd, copy.nonce, copy.offset,
                copy.generation));
  return buf;
}

} // namespace

TEST_CASE("a shared tensor travels inline with an offer, then by reference, "
          "bit for bit",
          "[messages][shm]") {
  auto c = shm::channel_to(fake_node(1));
  REQUIRE(c); // memfd works here
  auto v = values(10000, 0.25f);
  tensor x{v};
  x.share_with(c);
  // Not proved yet: the values inline, after a 24-byte offer.
  auto first = serialize(x);
  CHECK(first.size() == 8 + 16 + v.size() * 4);
  tensor y;
  REQUIRE(deserialize(first, y).empty());
  CHECK(same_bits(y, v));
  CHECK(shm::confirmed(*c)); // the reader mapped it and said so
  auto before = shm::stats();
  // Proved: a 36-byte reference, resolved into the same bits.
  auto second = serialize(x);
  CHECK(second.size() == 8 + 4 + 4 + 8 + 8 + 4);
  tensor z;
  REQUIRE(deserialize(second, z).empty());
  CHECK(same_bits(z, v));
  auto after = shm::stats();
  CHECK(after.written == before.written + 1);
  CHECK(after.read == before.read + 1);
  CHECK(after.bytes_read == before.bytes_read + v.size() * 4);
  // The same frame again: its block was freed when read, refused.
  tensor again;
  auto why = deserialize(second, again);
  CHECK(why.find("does not hold it") != std::string::npos);
  CHECK(again.empty());
}

TEST_CASE("forged references are refused before any allocation",
          "[messages][shm]") {
  auto c = shm::channel_to(fake_node(2));
  REQUIRE(c);
  auto v = values(256, 1.0f);
  tensor x{v};
  x.share_with(c);
  tensor sink;
  REQUIRE(deserialize(serialize(x), sink).empty()); // proves it
  auto good = parse_ref(serialize(x));
  REQUIRE((good.field >> 63) == 1);
  auto refused = [](const ref_frame& r, const char* what) {
    tensor t;
    auto why = deserialize(make_ref(r), t);
    INFO(what << ": " << why);
    CHECK(!why.empty());
    CHECK(t.empty());
  };
  auto r = good;
  r.nonce ^= 1;
  refused(r, "another nonce: a segment never proved");
  r = good;
  r.offset = 1u << 30;
  refused(r, "an offset past the segment");
  r = good;
  r.offset += 64;
  refused(r, "an offset inside another block");
  r = good;
  r.offset = std::numeric_limits<std::uint64_t>::max() - 7;
  refused(r, "an offset that wraps around");
  r = good;
  r.generation += 1;
  refused(r, "another generation");
  r = good;
  r.field = (std::uint64_t{1} << 63) | (std::uint64_t{1} << 29);
  refused(r, "a count larger than the block");
  r = good;
  r.field |= std::uint64_t{1} << 62;
  refused(r, "a reference and an offer at once");
  // The genuine one still reads (the refusals touched nothing).
  tensor ok;
  REQUIRE(deserialize(make_ref(good), ok).empty());
  CHECK(same_bits(ok, v));
}

TEST_CASE("an offer of something other than a sealed troupe segment is "
          "refused, and the values still arrive inline",
          "[messages][shm]") {
  char path[] = "/tmp/troupe-shm-test-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, 64 << 20) == 0);
  unlink(path);
  auto before = shm::stats();
  std::vector<char> buf;
  {
    caf::binary_serializer sink{nullptr, buf};
    std::uint64_t field = (std::uint64_t{1} << 62) | 2;
    auto pid = static_cast<std::uint32_t>(getpid());
    auto ufd = static_cast<std::uint32_t>(fd);
    std::uint64_t nonce = 42;
    float a = 1.25f, b = -2.0f;
    REQUIRE(!sink(field, pid, ufd, nonce));
    REQUIRE(!sink.apply_raw(4, &a));
    REQUIRE(!sink.apply_raw(4, &b));
  }
  tensor t;
  REQUIRE(deserialize(buf, t).empty());
  REQUIRE(t.size() == 2);
  CHECK(t[0] == 1.25f);
  CHECK(t[1] == -2.0f);
  CHECK(shm::stats().refused == before.refused + 1);
  close(fd);
}

TEST_CASE("a segment with no free block sends inline; freed blocks are used "
          "again",
          "[messages][shm]") {
  auto c = shm::channel_to(fake_node(3));
  REQUIRE(c);
  // 6 MiB tensors: the 64 MiB segment holds ten unread ones at most.
  auto v = values(6u << 18, 0.5f);
  tensor x{v};
  x.share_with(c);
  tensor t;
  REQUIRE(deserialize(serialize(x), t).empty()); // proves it
  std::vector<std::vector<char>> unread;
  std::size_t inline_frames = 0;
  for (int i = 0; i < 14; ++i) {
    auto buf = serialize(x);
    if (buf.size() > 1000)
      ++inline_frames;
    else
      unread.push_back(std::move(buf));
  }
  CHECK(inline_frames >= 4);
  CHECK(unread.size() >= 9);
  for (auto& buf : unread) {
    tensor y;
    auto why = deserialize(buf, y);
    INFO(why);
    REQUIRE(why.empty());
    CHECK(same_bits(y, v));
  }
  // All read: the ring starts over.
  auto buf = serialize(x);
  CHECK(buf.size() < 1000);
  tensor y;
  REQUIRE(deserialize(buf, y).empty());
  CHECK(same_bits(y, v));
}

TEST_CASE("with a block in flight the ring goes back to the start as soon "
          "as it has room, so the pages in use stay few",
          "[messages][shm]") {
  // A new page of the segment costs a fault and its zeroing on the writer's
  // side and a fault on the reader's: a sync round's replies, each sent
  // while the previous one was still in flight, went through all 64 MiB of
  // every segment before the ring came back (twice a sync job's early
  // seconds, docs/simulation.md "Stop 55").
  auto c = shm::channel_to(fake_node(5));
  REQUIRE(c);
  auto v = values(1u << 18, 0.25f); // 1 MiB
  tensor x{v};
  x.share_with(c);
  tensor t;
  REQUIRE(deserialize(serialize(x), t).empty()); // proves it
  auto previous = serialize(x);
  REQUIRE(previous.size() < 1000);
  std::uint64_t lowest = parse_ref(previous).offset, highest = lowest;
  for (int i = 0; i < 200; ++i) {
    auto next = serialize(x); // while `previous` is unread
    REQUIRE(next.size() < 1000);
    auto at = parse_ref(next).offset;
    lowest = std::min(lowest, at);
    highest = std::max(highest, at);
    tensor y;
    REQUIRE(deserialize(previous, y).empty());
    CHECK(same_bits(y, v));
    previous = std::move(next);
  }
  tensor y;
  REQUIRE(deserialize(previous, y).empty());
  // Two blocks' places, not 64 MiB's worth.
  INFO(lowest << " " << highest);
  CHECK(highest - lowest < (3u << 20));
}

TEST_CASE("with the fast path off no channel is made", "[messages][shm]") {
  REQUIRE(turned_on);
  shm::set_enabled(false);
  CHECK_FALSE(shm::channel_to(fake_node(4)));
  shm::set_enabled(true);
  CHECK(shm::channel_to(fake_node(4)));
}
