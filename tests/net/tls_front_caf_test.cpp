// The guard terminating TLS in front of a real CAF 0.17.6 port (plaintext on
// 127.0.0.1), as a TLS coordinator runs it: an unchanged caf::openssl node
// reaches the registrar through it, is admitted by its node id and moves
// megabytes both ways; a peer with a valid certificate that announces 1 GiB
// in its first BASP header is cut off by the same frame checks as a
// plaintext one, and the server allocates nothing for it.

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/all.hpp>
#include <caf/scoped_actor.hpp>
#include <catch2/catch.hpp>

#include "net/guard.hpp"
#include "tls_peer.hpp"

using namespace troupe::net;
using namespace troupe::test;
using namespace std::chrono_literals;

namespace {

bool have_openssl() {
  if (cert("ca.pem").empty()) {
    WARN("openssl command line tool not found: TLS tests skipped");
    return false;
  }
  return true;
}

/// This process's resident memory in KiB.
long rss_kib() {
  long pages = 0, resident = 0;
  if (auto* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2)
      resident = 0;
    std::fclose(f);
  }
  return resident * (::sysconf(_SC_PAGESIZE) / 1024);
}

std::string node_key(const caf::node_id& id) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  auto copy = id;
  REQUIRE_FALSE(sink(copy));
  return {buf.begin(), buf.end()};
}

struct plain_config : caf::actor_system_config {
  plain_config() {
    load<caf::io::middleman>();
  }
};

/// A node's config: caf::openssl with the node's files, as net/system.cpp
/// makes it.
struct node_config : caf::actor_system_config {
  explicit node_config(const tls_options& o) {
    load<caf::io::middleman>();
    apply_tls(*this, o);
  }
};

} // namespace

TEST_CASE("a caf::openssl node reaches the registrar through the TLS front, "
          "is admitted, and moves megabytes both ways") {
  if (!have_openssl())
    return;
  plain_config cfg_server;
  caf::actor_system server{cfg_server};
  auto mirror = server.spawn([]() -> caf::behavior {
    return {
        [](const std::string& s) { return std::string(s.rbegin(), s.rend()); }};
  });
  auto registrar = server.spawn([mirror]() -> caf::behavior {
    return {[](int x) { return x + 1; },
            [mirror](const std::string&) { return mirror; }};
  });
  auto inner = server.middleman().publish(registrar, 0, "127.0.0.1");
  REQUIRE(inner);
  guard_options opts;
  opts.registrar_id = registrar.id();
  opts.tls = good_tls();
  basp_guard guard{{"127.0.0.1", 0}, *inner, opts};
  {
    node_config cfg_node{good_tls()};
    caf::actor_system node{cfg_node};
    auto reg = caf::openssl::remote_actor(node, "127.0.0.1", guard.port());
    REQUIRE(reg);
    caf::scoped_actor self{node};
    int answer = 0;
    self->request(*reg, 10s, 41)
        .receive([&](int y) { answer = y; },
                 [&](caf::error& e) { FAIL(node.render(e)); });
    CHECK(answer == 42);
    guard.admit(node_key(node.node()));
    CHECK(guard.counters().admitted == 1);
    caf::actor handle;
    self->request(*reg, 10s, std::string{"mirror"})
        .receive([&](caf::actor& h) { handle = h; }, [](caf::error&) {});
    REQUIRE(handle);
    // 24 MiB each way: the pump's buffers and the relay's large-frame path.
    std::string big(24u << 20, '\0');
    for (std::size_t i = 0; i < big.size(); ++i)
      big[i] = static_cast<char>(i * 131 + (i >> 16));
    std::string back;
    self->request(handle, 60s, big)
        .receive([&](std::string& s) { back = std::move(s); },
                 [&](caf::error& e) { FAIL(node.render(e)); });
    CHECK(back.size() == big.size());
    CHECK(back == std::string(big.rbegin(), big.rend()));
    handle = nullptr;
    *reg = nullptr;
  }
  CHECK(guard.counters().tls_failed == 0);
  CHECK(guard.counters().refused == 0);
  CHECK(guard.counters().bytes_in > (24u << 20));
  caf::anon_send_exit(registrar, caf::exit_reason::kill);
  caf::anon_send_exit(mirror, caf::exit_reason::kill);
}

TEST_CASE("a TLS peer with a valid certificate that announces 1 GiB is cut "
          "off and allocates nothing behind the front") {
  if (!have_openssl())
    return;
  stderr_capture log;
  plain_config cfg_server;
  caf::actor_system server{cfg_server};
  auto registrar = server.spawn(
      []() -> caf::behavior { return {[](int x) { return x + 1; }}; });
  auto inner = server.middleman().publish(registrar, 0, "127.0.0.1");
  REQUIRE(inner);
  guard_options opts;
  opts.registrar_id = registrar.id();
  opts.tls = good_tls();
  basp_guard guard{{"127.0.0.1", 0}, *inner, opts};
  auto before = rss_kib();
  std::vector<std::unique_ptr<tls_peer>> peers;
  for (int i = 0; i < 3; ++i) {
    peers.push_back(std::make_unique<tls_peer>(guard.port(), good_tls()));
    REQUIRE(peers.back()->connected);
    REQUIRE(peers.back()->send(basp_handshake_header(1u << 30)));
  }
  std::this_thread::sleep_for(1s); // CAF would have allocated by now
  auto grown = rss_kib() - before;
  std::printf("memory grew by %ld KiB during the attack\n", grown);
  CHECK(grown < 100 * 1024);
  for (auto& p : peers)
    CHECK(p->closed_within(3));
  CHECK(guard.counters().refused == 3);
  CHECK(guard.counters().tls_failed == 0);
  CHECK(guard.counters().unreceived_peak == 0);
  auto line = log.wait_for({"guard: cut off 127.0.0.1:", "client handshake "
                                                         "payload of "
                                                         "1073741824 bytes "
                                                         "exceeds"});
  INFO(log.text());
  CHECK_FALSE(line.empty());
  caf::anon_send_exit(registrar, caf::exit_reason::kill);
}
