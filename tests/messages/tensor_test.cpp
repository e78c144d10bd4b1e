// Serialization of tensors and message types without a network: bit-exact
// round trips of special float values, rejection of hostile counts, and every
// registered type surviving a caf::message round trip.

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/deep_to_string.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <catch2/catch.hpp>

#include "messages/allreduce.hpp"
#include "messages/atoms.hpp"
#include "messages/compressed.hpp"
#include "messages/consensus.hpp"
#include "messages/control.hpp"
#include "messages/gossip.hpp"
#include "messages/join.hpp"
#include "messages/lbfgs.hpp"
#include "messages/messages.hpp"
#include "messages/metrics.hpp"
#include "messages/pipeline.hpp"
#include "messages/registry.hpp"

using namespace troupe::messages;

namespace {

float from_bits(std::uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

std::uint32_t to_bits(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

/// NaNs with payloads, infinities, signed zeros, denormals and extremes.
std::vector<float> special_values() {
  using lim = std::numeric_limits<float>;
  return {from_bits(0x7fc00000u), // quiet NaN
          from_bits(0x7fc12345u), // quiet NaN with payload
          from_bits(0xffc00001u), // negative NaN with payload
          from_bits(0x7f800001u), // signalling NaN bit pattern
          lim::infinity(),
          -lim::infinity(),
          -0.0f,
          0.0f,
          lim::denorm_min(),
          -lim::denorm_min(),
          from_bits(0x007fffffu), // largest denormal
          lim::min(),
          lim::max(),
          lim::lowest(),
          1.0f,
          -3.5f};
}

template <class T>
std::vector<char> serialize(T& x) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  auto err = sink(x);
  REQUIRE(!err);
  return buf;
}

template <class T>
T deserialize(const std::vector<char>& buf) {
  T result;
  caf::binary_deserializer source{nullptr, buf};
  auto err = source(result);
  REQUIRE(!err);
  CHECK(source.remaining() == 0);
  return result;
}

void require_bits_equal(const tensor& x, const tensor& y) {
  REQUIRE(x.size() == y.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO("element " << i);
    CHECK(to_bits(x[i]) == to_bits(y[i]));
  }
}

} // namespace

TEST_CASE("tensor round trip is bit-exact for special values", "[messages]") {
  tensor x{special_values()};
  auto buf = serialize(x);
  CHECK(buf.size() == sizeof(std::uint64_t) + x.size() * sizeof(float));
  auto y = deserialize<tensor>(buf);
  require_bits_equal(x, y);
  CHECK(x == y);
}

TEST_CASE("tensor raw block is little-endian floats after the count",
          "[messages]") {
  tensor x{std::vector<float>{1.0f}};
  auto buf = serialize(x);
  REQUIRE(buf.size() == 12);
  const unsigned char expected[] = {0x00, 0x00, 0x80, 0x3f}; // 1.0f LE
  CHECK(std::memcmp(buf.data() + 8, expected, 4) == 0);
}

TEST_CASE("empty tensor round trip", "[messages]") {
  tensor x;
  auto buf = serialize(x);
  CHECK(buf.size() == sizeof(std::uint64_t));
  auto y = deserialize<tensor>(buf);
  CHECK(y.empty());
}

TEST_CASE("tensor equality compares bits", "[messages]") {
  tensor a{std::vector<float>{0.0f}};
  tensor b{std::vector<float>{-0.0f}};
  CHECK(a != b);
  auto nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(tensor{std::vector<float>{nan}} == tensor{std::vector<float>{nan}});
}

namespace {

/// Reads a T from a count and `trailing_bytes` zeros: the error, and T
/// left empty.
template <class T>
caf::error read_count(std::uint64_t count, std::size_t trailing_bytes) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  REQUIRE(!sink(count));
  buf.resize(buf.size() + trailing_bytes);
  T x;
  caf::binary_deserializer source{nullptr, buf};
  auto err = source(x);
  CHECK(x.size() == 0);
  return err;
}

} // namespace

TEST_CASE("hostile tensor counts are rejected before allocating",
          "[messages]") {
  auto hostile = [](std::uint64_t count, std::size_t trailing_bytes) {
    CHECK(read_count<tensor>(count, trailing_bytes));
  };
  SECTION("above tensor::max_size") {
    hostile(tensor::max_size + 1, 16);
  }
  SECTION("2^63 elements") {
    hostile(std::uint64_t{1} << 63, 16);
  }
  SECTION("more elements than bytes left") {
    hostile(5, 16);
  }
  SECTION("truncated count") {
    std::vector<char> buf(4, 0);
    tensor x;
    caf::binary_deserializer source{nullptr, buf};
    CHECK(source(x));
    CHECK(x.empty());
  }
}

TEST_CASE("a hostile handle table's count is refused before reading",
          "[messages]") {
  auto read = read_count<handle_table>;
  auto err = read(handle_table::max_size + 1, 64);
  REQUIRE(err);
  CHECK(caf::to_string(err).find("max_size") != std::string::npos);
  CHECK(read(std::uint64_t{1} << 63, 64));
  CHECK(read(1000, 3)); // fewer bytes than handles
  CHECK_FALSE(read(0, 0));
}

TEST_CASE("every message type round-trips", "[messages]") {
  push_msg push{7, 42, 3, 1000, 5, 64, tensor{special_values()}};
  CHECK(deserialize<push_msg>(serialize(push)) == push);
  fetch_msg fetch{7, 1000, 16, 9};
  CHECK(deserialize<fetch_msg>(serialize(fetch)) == fetch);
  params_msg params{4, 1000, tensor{special_values()}};
  CHECK(deserialize<params_msg>(serialize(params)) == params);
  hello_msg hello{wire_version, "node-a", "secret", 2, 1, 200, 2000};
  CHECK(deserialize<hello_msg>(serialize(hello)) == hello);
}

TEST_CASE("registered types round-trip inside a caf::message", "[messages]") {
  caf::actor_system_config cfg;
  register_types(cfg);
  caf::actor_system sys{cfg};
  auto msg = caf::make_message(
      tensor{special_values()},
      push_msg{1, 2, 3, 4, 5, 6, tensor{special_values()}},
      fetch_msg{1, 2, 3, 4}, params_msg{5, 6, tensor{special_values()}},
      hello_msg{wire_version, "n", "", 0, 0, 0, 0}, real{0.5},
      progress_msg{1, 2, 3, real{4}}, worker_stats{}, worker_pushes{},
      shard_stats{}, eval_msg{},
      node_metrics{"n", "k", {actor_metrics{}}, {}, {"a log line"}},
      score_msg{1, 2, real{0.5}}, lead_msg{3, true, 0.1, {}},
      pull_msg{3, false, 1, 0.1, tensor{special_values()}},
      gossip_msg{2, 9, 0.5, tensor{special_values()}},
      group_msg{1, 4, tensor{special_values()}},
      delta_msg{7, tensor{special_values()}},
      shadow_msg{1, 2, 3, tensor{special_values()}},
      compressed_push_msg{1, 2, 3, 4, 5, 6, 7, std::string{"\0\x01\xff", 3}},
      compressed_gossip_msg{1, 2, 0.5, 0.25, 7, std::string{"ab"}},
      lbfgs_vec_msg{1, 2, 3, real{0.5}},
      lbfgs_point_msg{4, std::string{"\0\x01\xff", 3}},
      lbfgs_grad_msg{4, 5, 6, std::string{"abcdefgh"}},
      lbfgs_done_msg{1, 4, 5, real{2.5}, 6}, cede_msg{3, 120, {4, 5, 6}},
      stage_batch_msg{
          1, 2, 3, 4, 5, real{0.25}, tensor{special_values()}, {7, 8}, {0.5f}},
      stage_tensor_msg{1, 2, 3, 4, true, 6, tensor{special_values()}},
      stage_done_msg{1, 2, 3, 4, real{0.75}, 5, 6},
      stage_wiring_msg{9, caf::actor{}, {caf::actor{}, caf::actor{}}},
      ring_chunk_msg{3, 41, 1, 2, 5, 96, tensor{special_values()}, 44},
      peer_list_msg{{2, 7}, {caf::actor{}, caf::actor{}}, {}},
      dual_msg{5, 8, tensor{special_values()}},
      mirror_msg{1, 4, 9, 3, std::string(16, '\x01')}, ack_atom::value);
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  REQUIRE(!sink(msg));
  caf::message copy;
  caf::binary_deserializer source{sys, buf};
  REQUIRE(!source(copy));
  REQUIRE(copy.size() == registered_type_names().size() + 1);
  REQUIRE(copy.match_elements<
          tensor, push_msg, fetch_msg, params_msg, hello_msg, real,
          progress_msg, worker_stats, worker_pushes, shard_stats, eval_msg,
          node_metrics, score_msg, lead_msg, pull_msg, gossip_msg, group_msg,
          delta_msg, shadow_msg, compressed_push_msg, compressed_gossip_msg,
          lbfgs_vec_msg, lbfgs_point_msg, lbfgs_grad_msg, lbfgs_done_msg,
          cede_msg, stage_batch_msg, stage_tensor_msg, stage_done_msg,
          stage_wiring_msg, ring_chunk_msg, peer_list_msg, dual_msg, mirror_msg,
          ack_atom>());
  require_bits_equal(copy.get_as<tensor>(0), msg.get_as<tensor>(0));
  CHECK(copy.get_as<push_msg>(1) == msg.get_as<push_msg>(1));
  CHECK(copy.get_as<fetch_msg>(2) == msg.get_as<fetch_msg>(2));
  CHECK(copy.get_as<params_msg>(3) == msg.get_as<params_msg>(3));
  CHECK(copy.get_as<hello_msg>(4) == msg.get_as<hello_msg>(4));
  require_bits_equal(copy.get_as<gossip_msg>(15).values,
                     msg.get_as<gossip_msg>(15).values);
  CHECK(copy.get_as<gossip_msg>(15).weight == 0.5);
  require_bits_equal(copy.get_as<shadow_msg>(18).sum,
                     msg.get_as<shadow_msg>(18).sum);
  CHECK(copy.get_as<shadow_msg>(18).count == 3);
  CHECK(copy.get_as<compressed_push_msg>(19).packed
        == std::string{"\0\x01\xff", 3});
  CHECK(copy.get_as<compressed_gossip_msg>(20).fraction == 0.25);
  CHECK(copy.get_as<lbfgs_vec_msg>(21).alpha.value == 0.5);
  CHECK(copy.get_as<lbfgs_point_msg>(22).values
        == std::string{"\0\x01\xff", 3});
  CHECK(copy.get_as<lbfgs_grad_msg>(23).samples == 6);
  CHECK(copy.get_as<lbfgs_done_msg>(24).loss.value == 2.5);
  CHECK(copy.get_as<cede_msg>(25).examples
        == std::vector<std::uint64_t>{4, 5, 6});
  CHECK(to_string(copy.get_as<cede_msg>(25))
        == "cede_msg(3, 120 steps, 3 examples)");
  const auto& batch = copy.get_as<stage_batch_msg>(26);
  require_bits_equal(batch.x, msg.get_as<stage_batch_msg>(26).x);
  CHECK(batch.labels == std::vector<std::int32_t>{7, 8});
  CHECK(batch.targets == std::vector<float>{0.5f});
  CHECK(batch.scale.value == 0.25);
  CHECK(batch.samples == 5);
  const auto& act = copy.get_as<stage_tensor_msg>(27);
  CHECK(act.backward);
  CHECK(act.rows == 6);
  require_bits_equal(act.values, msg.get_as<stage_tensor_msg>(27).values);
  CHECK(copy.get_as<stage_done_msg>(28).loss.value == 0.75);
  CHECK(copy.get_as<stage_done_msg>(28).idle_ns == 6);
  CHECK(copy.get_as<stage_wiring_msg>(29).generation == 9);
  CHECK(copy.get_as<stage_wiring_msg>(29).stages.size() == 2);
  const auto& ring = copy.get_as<ring_chunk_msg>(30);
  require_bits_equal(ring.values, msg.get_as<ring_chunk_msg>(30).values);
  std::string ring_text = "ring_chunk_msg(from 3, step 41, all-gather hop 2, "
                          "chunk 5, 96 samples, ";
  ring_text
      += std::to_string(ring.values.size()) + " values, pause after step 44)";
  CHECK(to_string(ring) == ring_text);
  CHECK(ring.pause_at == 44);
  CHECK(copy.get_as<peer_list_msg>(31).ranks == std::vector<worker_id>{2, 7});
  CHECK(to_string(copy.get_as<peer_list_msg>(31))
        == "peer_list_msg(2 ranks: 2 7)");
  CHECK(wire_size(ring) == 45 + 4 * ring.values.size());
  const auto& mirror = copy.get_as<mirror_msg>(33);
  CHECK(mirror.group == 1);
  CHECK(mirror.clock == 9);
  CHECK(mirror.packed == std::string(16, '\x01'));
  CHECK(to_string(mirror) == "mirror_msg(1, 4, 9, 3, 16 bytes)");
  CHECK(wire_size(mirror) == 36 + 16);
  CHECK(to_string(act)
        == "stage_tensor_msg(replica 1, gen 2, step 3, micro 4, backward, "
               + std::to_string(act.values.size()) + " values)");
}

TEST_CASE("messages print for logs", "[messages]") {
  CHECK(to_string(tensor{}) == "tensor(size=0)");
  CHECK(to_string(tensor{std::vector<float>{1, 2, 3, 4, 5}})
        == "tensor(size=5, [1.000000, 2.000000, 3.000000, 4.000000, ...])");
  push_msg push{7, 42, 3, 1000, 5, 64, tensor{std::vector<float>{0.5f}}};
  CHECK(to_string(push)
        == "push_msg(7, 42, 3, 1000, 5, 64, tensor(size=1, [0.500000]))");
  CHECK(to_string(fetch_msg{1, 2, 3, 4}) == "fetch_msg(1, 2, 3, 4)");
  CHECK(to_string(hello_msg{1, "a", "", 0, 0, 0, 0})
        == "hello_msg(1, \"a\", \"\", 0, 0, 0, 0)");
  // The join token never reaches a log.
  CHECK(to_string(hello_msg{1, "a", "secret", 2, 1, 200, 2000})
        == "hello_msg(1, \"a\", \"***\", 2, 1, 200, 2000)");
  // CAF's own stringification (used by its logger) picks up to_string.
  CHECK(caf::deep_to_string(push) == to_string(push));
}
