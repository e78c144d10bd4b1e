// The port guard (net/guard.hpp) in front of a tiny TCP sink that records
// what it receives: which frames reach the server, and when; deadlines,
// budgets, limits and the admission filter. No CAF (guard_caf_test.cpp puts
// a real CAF port behind it).

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <catch2/catch.hpp>

#include "net/guard.hpp"
#include "tests/net/guard_fixture.hpp"

using namespace troupe::net;
using namespace guard_fixture;

TEST_CASE("frame rules: handshake cap, TLS, and what may come before "
          "admission") {
  guard_options o;
  o.registrar_id = 6;
  std::set<std::uint64_t> callers{9};
  frame_rules first{true, false, &callers}, before{false, false, &callers},
      after{false, true, nullptr};
  auto act = [&](const bytes& h, const frame_rules& r) {
    return basp_guard::check_frame(h.data(), r, o).action;
  };
  CHECK(act(header(1, 32), first) == frame_action::forward);
  auto big = basp_guard::check_frame(header(1, 1u << 30).data(), first, o);
  CHECK(big.action == frame_action::refuse);
  CHECK_THAT(big.reason, Catch::Contains("client handshake payload of "
                                         "1073741824 bytes exceeds"));
  bytes hello{0x16, 0x03, 0x01, 0x02, 0x00};
  hello.resize(32);
  CHECK_THAT(basp_guard::check_frame(hello.data(), first, o).reason,
             Catch::Contains("a TLS client at a plaintext port"));
  CHECK(act(header(2, 100, 6), before) == frame_action::forward);
  CHECK(act(header(2, 100, 9), before) == frame_action::forward);
  CHECK(act(header(4, 64, 6), before) == frame_action::forward);
  CHECK(act(header(6, 0), before) == frame_action::forward);
  CHECK(act(header(5, 64), before) == frame_action::forward);
  CHECK(act(header(2, 100, 12), before) == frame_action::refuse);
  CHECK(act(header(4, 64, 12), before) == frame_action::refuse);
  CHECK(act(header(3, 100, 6), before) == frame_action::refuse);
  CHECK(act(header(0, 100), before) == frame_action::refuse);
  CHECK(act(header(2, 100, 6, 1), before) == frame_action::drop);
  CHECK(act(header(2, (64u << 10) + 1, 6), before) == frame_action::refuse);
  // Admitted: any valid frame up to max_payload.
  CHECK(act(header(2, 1u << 29, 12), after) == frame_action::forward);
  CHECK(act(header(3, 100, 12), after) == frame_action::forward);
  CHECK(act(header(2, (1u << 30) + 1, 12), after) == frame_action::refuse);
}

TEST_CASE("a large frame's header reaches the server only once the bytes "
          "still missing fit the budget") {
  sink server;
  guard_options o;
  o.max_buffered_payload = 64 << 10;
  o.max_unreceived_per_connection = 1 << 20;
  basp_guard g{front(), server.port, o};
  int c = connect_to(g.port());
  send_all(c, handshake());
  REQUIRE(eventually([&] { return server.size(0) == 64; }));
  g.admit(key);
  REQUIRE(g.counters().admitted == 1);
  const std::uint32_t len = 4 << 20;
  bytes payload(len);
  for (std::size_t i = 0; i < payload.size(); ++i)
    payload[i] = static_cast<unsigned char>(i * 7);
  auto frame = header(2, len, 12);
  send_all(c, frame);
  send_all(c, bytes(payload.begin(), payload.begin() + (2 << 20)));
  // 2 MiB missing > 1 MiB budget: nothing of the frame reaches the server.
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  CHECK(server.size(0) == 64);
  CHECK(g.counters().unreceived == 0);
  send_all(c, bytes(payload.begin() + (2 << 20),
                    payload.begin() + (3 << 20) + (512 << 10)));
  // 0.5 MiB missing: the header and the bytes in hand go through.
  REQUIRE(eventually(
      [&] { return server.size(0) == 64 + 32 + (3u << 20) + (512u << 10); }));
  CHECK(eventually([&] { return g.counters().unreceived == 512u << 10; }));
  send_all(c, bytes(payload.begin() + (3 << 20) + (512 << 10), payload.end()));
  REQUIRE(eventually([&] { return server.size(0) == 64 + 32 + len; }));
  CHECK(g.counters().unreceived == 0);
  CHECK(g.counters().unreceived_peak <= 1u << 20);
  {
    std::lock_guard<std::mutex> guard{server.mtx};
    auto& got = server.got[0];
    CHECK(bytes(got.begin() + 64, got.begin() + 96) == frame);
    CHECK(bytes(got.begin() + 96, got.end()) == payload);
  }
  ::close(c);
}

TEST_CASE("a frame whose bytes stop flowing is cut after frame_timeout") {
  sink server;
  guard_options o;
  o.max_buffered_payload = 64 << 10;
  o.frame_timeout = 0.5;
  basp_guard g{front(), server.port, o};
  int c = connect_to(g.port());
  send_all(c, handshake());
  REQUIRE(eventually([&] { return server.size(0) == 64; }));
  g.admit(key);
  // Announced 512 MiB, sent 1 MiB, then silence.
  send_all(c, header(2, 512u << 20, 12));
  send_all(c, bytes(1 << 20, 1));
  auto t0 = clk::now();
  CHECK(closed_within(c, 5));
  CHECK(clk::now() - t0 < std::chrono::seconds{3});
  CHECK(server.size(0) == 64); // 511 MiB missing: never forwarded
  CHECK(g.counters().unreceived_peak == 0);
  CHECK(g.counters().timed_out == 1);
  ::close(c);
}

TEST_CASE("the handshake deadline counts from accept, not per receive") {
  sink server;
  guard_options o;
  o.handshake_timeout = 1;
  basp_guard g{front(), server.port, o};
  int c = connect_to(g.port());
  auto hs = handshake();
  auto t0 = clk::now();
  bool closed = false;
  // One byte every 0.2 s would take 12.8 s for the whole handshake.
  for (std::size_t i = 0; i < hs.size() && !closed; ++i) {
    ::send(c, &hs[i], 1, MSG_NOSIGNAL);
    closed = closed_within(c, 0.2);
  }
  auto took = std::chrono::duration<double>(clk::now() - t0).count();
  CHECK(closed);
  CHECK(took < 2.5);
  CHECK(g.counters().timed_out == 1);
  CHECK(server.size(0) == 0);
  ::close(c);
}

TEST_CASE("connections not yet admitted are limited per address and in "
          "total; admitted ones free their slot") {
  sink server;
  guard_options o;
  o.max_pending_per_address = 2;
  o.max_pending = 3;
  basp_guard g{front(), server.port, o};
  int a1 = connect_to(g.port(), "127.0.0.2");
  int a2 = connect_to(g.port(), "127.0.0.2");
  int a3 = connect_to(g.port(), "127.0.0.2");
  CHECK(closed_within(a3, 2)); // over the per-address limit
  CHECK_FALSE(closed_within(a1, 0.2));
  int b1 = connect_to(g.port(), "127.0.0.1"); // another address: let in
  CHECK_FALSE(closed_within(b1, 0.3));
  int b2 = connect_to(g.port(), "127.0.0.1");
  CHECK(closed_within(b2, 2)); // over the total
  // b1's node is admitted: its slot is free again.
  send_all(b1, handshake());
  REQUIRE(eventually([&] { return g.counters().bytes_in == 64; }));
  g.admit(key);
  int b3 = connect_to(g.port(), "127.0.0.1");
  CHECK_FALSE(closed_within(b3, 0.3));
  CHECK(g.counters().refused == 2);
  for (int fd : {a1, a2, a3, b1, b2, b3})
    ::close(fd);
}

TEST_CASE("before admission: frames to the registrar pass, named receivers "
          "are dropped, anything else cuts the connection") {
  sink server;
  guard_options o;
  o.registrar_id = 6;
  basp_guard g{front(), server.port, o};
  int c = connect_to(g.port());
  send_all(c, handshake());
  auto to_registrar = header(2, 8, 6);
  to_registrar.resize(40, 'r');
  send_all(c, to_registrar);
  REQUIRE(eventually([&] { return server.size(0) == 64 + 40; }));
  auto named = header(2, 8, 0x5370617753657276, 1); // SpawnServ
  named.resize(40, 'n');
  send_all(c, named);
  send_all(c, to_registrar);
  REQUIRE(eventually([&] { return server.size(0) == 64 + 80; }));
  CHECK(g.counters().dropped == 1);
  auto elsewhere = header(2, 8, 12);
  elsewhere.resize(40, 'e');
  send_all(c, elsewhere);
  CHECK(closed_within(c, 2));
  CHECK(server.size(0) == 64 + 80);
  CHECK(g.counters().refused == 1);
  ::close(c);
}

TEST_CASE("a frame naming a caf::config_value is cut off, and so is a "
          "streamed one whose first 64 KiB hold a nested message") {
  sink server;
  guard_options o;
  o.registrar_id = 6;
  o.max_buffered_payload = 64 << 10;
  basp_guard g{front(), server.port, o};
  auto message_frame = [](std::uint32_t len, const std::string& types) {
    auto f = header(2, len, 6);
    bytes payload(len, 'p');
    std::copy(types.begin(), types.end(), payload.begin() + 8);
    f.insert(f.end(), payload.begin(), payload.end());
    return f;
  };
  // Before admission, and nested in an error's context (CAF 0.17.6 throws
  // on a config_value with a bad type index: the process would end).
  int c = connect_to(g.port());
  send_all(c, handshake());
  send_all(c, message_frame(64, "@<>+@atom"));
  REQUIRE(eventually([&] { return server.size(0) == 64 + 96; }));
  send_all(c, message_frame(64, "@<>+@error...@<>+@config_value"));
  CHECK(closed_within(c, 2));
  CHECK(server.size(0) == 64 + 96);
  CHECK(g.counters().refused == 1);
  ::close(c);
  // Admitted: a streamed frame (over max_buffered_payload) passes with plain
  // elements and is cut with a nested message among its first bytes.
  c = connect_to(g.port());
  send_all(c, handshake());
  REQUIRE(eventually([&] { return server.size(1) == 64; }));
  g.admit(key);
  const std::uint32_t len = 1 << 20;
  send_all(c, message_frame(len, "@<>+troupe::push_msg"));
  REQUIRE(eventually([&] { return server.size(1) == 64 + 32 + len; }));
  // The guard may cut the connection while the frame is still being sent.
  auto refused = message_frame(len, "@<>+@message");
  (void)::send(c, refused.data(), refused.size(), MSG_NOSIGNAL);
  CHECK(closed_within(c, 2));
  CHECK(server.size(1) == 64 + 32 + len);
  CHECK(g.counters().refused == 2);
  ::close(c);
}

TEST_CASE("a vouched node key admits its connections at their handshake, "
          "later ones too; other keys stay unadmitted") {
  sink server;
  guard_options o;
  o.registrar_id = 6;
  basp_guard g{front(), server.port, o};
  g.vouch(key);
  CHECK(g.counters().admitted == 0);
  auto elsewhere = header(2, 8, 12);
  elsewhere.resize(40, 'e');
  // Two connections with the vouched key, one after the other: each is
  // admitted at its handshake, and a frame to any actor passes.
  for (std::size_t i = 0; i < 2; ++i) {
    int c = connect_to(g.port());
    send_all(c, handshake());
    send_all(c, elsewhere);
    REQUIRE(eventually([&] { return server.size(i) == 64 + 40; }));
    CHECK(g.counters().admitted == i + 1);
    ::close(c);
  }
  // Another node's key: the same frame cuts it off.
  auto other = header(1, 32);
  other.resize(64, 'O');
  int c = connect_to(g.port());
  send_all(c, other);
  send_all(c, elsewhere);
  CHECK(closed_within(c, 2));
  CHECK(g.counters().refused == 1);
  CHECK(g.counters().admitted == 2);
  ::close(c);
}
