// A node's peer port (net/peer_link.hpp) checks who knocks: a forked child
// opens one, with this process's node as its coordinator; this process
// reaches the door through the port guard as any stranger could, and knocks
// with a wrong token, then with the right one before and after the
// "coordinator" listed it as a member. Only the last knock is vouched for.
// Every wait has a timeout; the child is killed at the end.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <poll.h>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <caf/all.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/io/all.hpp>
#include <catch2/catch.hpp>

#include "messages/atoms.hpp"
#include "messages/errors.hpp"
#include "net/peer_link.hpp"
#include "net/system.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

constexpr auto timeout = 10s;
const std::string token = "peer-link-token";

struct config : net::link_config {
  config() : net::link_config(net::link_options{}, 2) {
    set("logger.console", caf::atom("none"));
  }
};

bool read_all(int fd, void* buf, std::size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, 30'000) != 1)
      return false;
    auto got = read(fd, p, n);
    if (got <= 0)
      return false;
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

/// The child: reads the coordinator's node key, opens a peer port, writes
/// its port; on each byte from `in` writes (vouched, refused). Never returns.
[[noreturn]] void run_door(int in, int out) {
  {
    std::uint32_t len = 0;
    std::string key;
    if (!read_all(in, &len, sizeof len) || len > 4096)
      _exit(2);
    key.resize(len);
    if (!read_all(in, key.data(), len))
      _exit(2);
    caf::node_id coordinator;
    caf::binary_deserializer source{nullptr, key.data(), key.size()};
    if (source(coordinator))
      _exit(2);
    config cfg;
    caf::actor_system sys{cfg};
    net::door_config dc;
    dc.token = token;
    dc.coordinator = coordinator;
    net::peer_port port{
        sys, net::link_options{}, {"127.0.0.1", 0}, "127.0.0.1", dc};
    auto number = static_cast<std::uint16_t>(
        std::stoi(port.address().substr(port.address().rfind(':') + 1)));
    if (write(out, &number, sizeof number) != sizeof number)
      _exit(2);
    for (;;) {
      char cmd = 0;
      if (!read_all(in, &cmd, 1))
        break;
      std::uint64_t counts[2] = {port.vouched(), port.refused()};
      if (write(out, counts, sizeof counts) != sizeof counts)
        break;
    }
  }
  _exit(0);
}

} // namespace

TEST_CASE("a peer door vouches only for a member the coordinator listed, "
          "knocking with the job's token",
          "[net][peer_link]") {
  int to_child[2], from_child[2];
  REQUIRE(pipe(to_child) == 0);
  REQUIRE(pipe(from_child) == 0);
  auto pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(to_child[1]);
    close(from_child[0]);
    run_door(to_child[0], from_child[1]);
  }
  close(to_child[0]);
  close(from_child[1]);
  auto counts = [&] {
    char cmd = 'c';
    std::uint64_t c[2] = {99, 99};
    REQUIRE(write(to_child[1], &cmd, 1) == 1);
    REQUIRE(read_all(from_child[0], c, sizeof c));
    return std::make_pair(c[0], c[1]);
  };
  {
    config cfg;
    caf::actor_system sys{cfg};
    auto key = net::node_key(sys.node());
    auto len = static_cast<std::uint32_t>(key.size());
    REQUIRE(write(to_child[1], &len, sizeof len) == sizeof len);
    REQUIRE(write(to_child[1], key.data(), len) == len);
    std::uint16_t port = 0;
    REQUIRE(read_all(from_child[0], &port, sizeof port));
    std::printf("peer_link_test: door of process %d on 127.0.0.1:%u\n",
                static_cast<int>(pid), static_cast<unsigned>(port));
    auto door = sys.middleman().remote_actor("127.0.0.1", port);
    REQUIRE(door);
    caf::scoped_actor self{sys};
    auto knock = [&](const std::string& tok) {
      std::string answer = "ack";
      self->request(*door, timeout, net::knock_atom::value, tok)
          .receive([](messages::ack_atom) {},
                   [&](caf::error& err) { answer = sys.render(err); });
      return answer;
    };
    auto wrong = knock("wrong");
    CHECK(wrong.find("not_allowed") != std::string::npos);
    CHECK(wrong.find("job's token") != std::string::npos);
    auto early = knock(token);
    CHECK(early.find("a member the coordinator listed") != std::string::npos);
    CHECK(counts() == std::make_pair(std::uint64_t{0}, std::uint64_t{2}));
    // This process is the door's coordinator: its list makes this node a
    // member (an actor of it stands for its door; the address is never
    // dialled, the list names no door before the child's own).
    auto stand_in = sys.spawn([] { return caf::behavior{[](int) {}}; });
    self->send(*door, net::links_atom::value, std::vector<caf::actor>{stand_in},
               std::vector<std::string>{"127.0.0.1:1"});
    std::string late;
    for (int i = 0; i < 50; ++i) {
      late = knock(token);
      if (late == "ack")
        break;
      std::this_thread::sleep_for(100ms);
    }
    CHECK(late == "ack");
    CHECK(counts().first == 1);
    caf::anon_send_exit(stand_in, caf::exit_reason::user_shutdown);
  }
  close(to_child[1]);
  close(from_child[0]);
  for (int i = 0; i < 50 && waitpid(pid, nullptr, WNOHANG) != pid; ++i)
    usleep(100'000);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, WNOHANG);
}
