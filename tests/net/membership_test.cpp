// The pure parts of distributed jobs: placement, the join checks, the guard's
// frame check, endpoints and tokens.

#include <fstream>

#include <catch2/catch.hpp>

#include "net/guard.hpp"
#include "net/placement.hpp"
#include "net/registrar.hpp"
#include "net/system.hpp"

using namespace troupe::net;
using troupe::messages::hello_msg;
using troupe::messages::wire_version;

TEST_CASE("placement fills the nodes' slots round robin, the rest stays") {
  // Two nodes with 2 and 1 worker slots, one with a shard slot.
  auto p = place(4, 2, {{2, 0}, {1, 1}});
  CHECK(p.worker_node == std::vector<std::int32_t>{0, 1, 0, -1});
  CHECK(p.shard_node == std::vector<std::int32_t>{1, -1});
  // Evenly over equal nodes.
  auto q = place(4, 0, {{2, 0}, {2, 0}});
  CHECK(q.worker_node == std::vector<std::int32_t>{0, 1, 0, 1});
  // No nodes: everything local.
  auto r = place(2, 1, {});
  CHECK(r.worker_node == std::vector<std::int32_t>{-1, -1});
  CHECK(r.shard_node == std::vector<std::int32_t>{-1});
}

TEST_CASE("a hello is refused for version, token, heartbeats and slots") {
  registrar_config c;
  c.token = "secret";
  c.heartbeat_ms = 200;
  c.timeout_ms = 2000;
  hello_msg ok{wire_version, "n:1", "secret", 1, 0, 200, 2000};
  CHECK(check_hello(c, ok).empty());
  auto h = ok;
  h.version = wire_version + 1;
  CHECK_THAT(check_hello(c, h), Catch::Contains("wire version"));
  h = ok;
  h.token = "secreT";
  CHECK(check_hello(c, h) == "wrong join token");
  h.token.clear();
  CHECK_THAT(check_hello(c, h), Catch::Contains("needs a join token"));
  h = ok;
  h.timeout_ms = 1000;
  CHECK_THAT(check_hello(c, h), Catch::Contains("heartbeat settings differ"));
  h = ok;
  h.worker_slots = 0;
  CHECK_THAT(check_hello(c, h), Catch::Contains("no worker and no shard"));
  // Without a token configured, any token is accepted.
  c.token.clear();
  h = ok;
  h.token = "whatever";
  CHECK(check_hello(c, h).empty());
}

namespace {

std::array<unsigned char, 32> header(unsigned char op, std::uint32_t len) {
  std::array<unsigned char, 32> h{};
  h[0] = op;
  h[4] = static_cast<unsigned char>(len >> 24);
  h[5] = static_cast<unsigned char>(len >> 16);
  h[6] = static_cast<unsigned char>(len >> 8);
  h[7] = static_cast<unsigned char>(len);
  return h;
}

} // namespace

TEST_CASE("the guard checks operation, first frame and payload length") {
  const std::uint32_t limit = 1u << 20;
  CHECK(basp_guard::check_header(header(1, 100).data(), true, limit).empty());
  CHECK(
      basp_guard::check_header(header(2, limit).data(), false, limit).empty());
  CHECK(basp_guard::check_header(header(6, 0).data(), false, limit).empty());
  CHECK_THAT(basp_guard::check_header(header(2, 100).data(), true, limit),
             Catch::Contains("not a client handshake"));
  CHECK_THAT(basp_guard::check_header(header(7, 0).data(), false, limit),
             Catch::Contains("unknown BASP operation 7"));
  CHECK_THAT(
      basp_guard::check_header(header(2, 0xFFFFFFF0u).data(), false, limit),
      Catch::Contains("4294967280 bytes exceeds"));
}

TEST_CASE("endpoints, tokens and token files") {
  auto e = parse_endpoint("10.0.0.1:7000", "--join");
  CHECK(e.host == "10.0.0.1");
  CHECK(e.port == 7000);
  CHECK(parse_endpoint("[::1]:0", "--listen").host == "::1");
  for (auto bad : {"host", ":1", "h:", "h:x1", "h:70000", "h:123456"})
    CHECK_THROWS_WITH(parse_endpoint(bad, "--join"),
                      Catch::Contains("--join=")
                          && Catch::Contains("HOST:PORT"));
  CHECK(tokens_equal("abc", "abc"));
  CHECK_FALSE(tokens_equal("abc", "abd"));
  CHECK_FALSE(tokens_equal("abc", "abcd"));
  CHECK_FALSE(tokens_equal("", "a"));
  auto path = std::string{TROUPE_BINARY_DIR} + "/membership_token.txt";
  std::ofstream{path} << "  t0ken \n second line\n";
  CHECK(read_token_file(path) == "t0ken");
  std::ofstream{path} << "\n";
  CHECK_THROWS_WITH(read_token_file(path), Catch::Contains("empty"));
  CHECK_THROWS_WITH(read_token_file(path + ".missing"),
                    Catch::Contains("cannot be read"));
}
