// The port guard in front of a real CAF 0.17.6 port: a payload announced
// but not sent allocates nothing behind it, a CAF node reaches the published
// actor through it, and admit() recognises the node by the id in its client
// handshake (the bytes a caf::binary_serializer writes for its node_id).

#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>
#include <catch2/catch.hpp>

#include "net/guard.hpp"

using namespace troupe::net;
using namespace std::chrono_literals;

namespace {

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

/// Connects to 127.0.0.1:port and sends a client handshake header that
/// announces `len` payload bytes (none follow).
int announce(std::uint16_t port, std::uint32_t len) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  unsigned char h[32] = {1};
  h[15] = 3; // operation_data, as BASP 0.17 peers send
  for (int i = 0; i < 4; ++i)
    h[4 + i] = static_cast<unsigned char>(len >> (24 - 8 * i));
  REQUIRE(::send(fd, h, sizeof(h), MSG_NOSIGNAL) == 32);
  return fd;
}

/// True if the peer closed `fd` within 3 s (it may send first).
bool closed_soon(int fd) {
  auto end = std::chrono::steady_clock::now() + 3s;
  unsigned char b[1024];
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) == 1 && ::recv(fd, b, sizeof(b), 0) <= 0)
      return true;
  }
  return false;
}

std::string node_key(const caf::node_id& id) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  auto copy = id;
  REQUIRE_FALSE(sink(copy));
  return {buf.begin(), buf.end()};
}

struct system_config : caf::actor_system_config {
  system_config() {
    load<caf::io::middleman>();
  }
};

} // namespace

TEST_CASE("behind a real CAF port: announced bytes allocate nothing, nodes "
          "reach the registrar and are admitted by their node id") {
  system_config cfg_server, cfg_node, cfg_stranger;
  caf::actor_system server{cfg_server};
  auto other = server.spawn(
      []() -> caf::behavior { return {[](int x) { return x * 2; }}; });
  auto registrar = server.spawn([other]() -> caf::behavior {
    return {[](int x) { return x + 1; },
            [other](const std::string&) { return other; }};
  });
  auto inner = server.middleman().publish(registrar, 0, "127.0.0.1");
  REQUIRE(inner);
  guard_options opts;
  opts.registrar_id = registrar.id();
  basp_guard guard{{"127.0.0.1", 0}, *inner, opts};

  // Three connections announce 512 MiB handshakes: CAF would allocate them.
  auto before = rss_kib();
  std::vector<int> attackers;
  for (int i = 0; i < 3; ++i)
    attackers.push_back(announce(guard.port(), 512u << 20));
  std::this_thread::sleep_for(1s); // CAF would have allocated by now
  auto grown = rss_kib() - before;
  std::printf("memory grew by %ld KiB during the attack\n", grown);
  CHECK(grown < 100 * 1024);
  for (int fd : attackers) {
    CHECK(closed_soon(fd));
    ::close(fd);
  }
  CHECK(guard.counters().refused == 3);

  // A node asks the registrar (allowed before admission); CAF's query to
  // our SpawnServ is dropped.
  {
    caf::actor_system node{cfg_node};
    auto reg = node.middleman().remote_actor("127.0.0.1", guard.port());
    REQUIRE(reg);
    caf::scoped_actor self{node};
    int answer = 0;
    self->request(*reg, 5s, 41)
        .receive([&](int y) { answer = y; }, [](caf::error&) {});
    CHECK(answer == 42);
    CHECK(guard.counters().dropped >= 1);
    // Admitted by its node id, it may address any actor.
    guard.admit(node_key(node.node()));
    CHECK(guard.counters().admitted == 1);
    caf::actor handle;
    self->request(*reg, 5s, std::string{"other"})
        .receive([&](caf::actor& h) { handle = h; }, [](caf::error&) {});
    REQUIRE(handle);
    int doubled = 0;
    self->request(handle, 5s, 5)
        .receive([&](int y) { doubled = y; }, [](caf::error&) {});
    CHECK(doubled == 10);
    handle = nullptr;
    *reg = nullptr;
  }

  // A stranger (not admitted) that gets another actor's handle is cut off as
  // soon as it addresses it.
  {
    caf::actor_system stranger{cfg_stranger};
    auto reg = stranger.middleman().remote_actor("127.0.0.1", guard.port());
    REQUIRE(reg);
    caf::scoped_actor self{stranger};
    caf::actor handle;
    self->request(*reg, 5s, std::string{"other"})
        .receive([&](caf::actor& h) { handle = h; }, [](caf::error&) {});
    REQUIRE(handle);
    bool failed = false;
    self->request(handle, 3s, 5)
        .receive([](int) {}, [&](caf::error&) { failed = true; });
    CHECK(failed);
    CHECK(guard.counters().refused == 4);
    CHECK(guard.counters().admitted == 1);
    handle = nullptr;
    *reg = nullptr;
  }
  caf::anon_send_exit(registrar, caf::exit_reason::kill);
  caf::anon_send_exit(other, caf::exit_reason::kill);
  registrar = nullptr;
  other = nullptr;
}
