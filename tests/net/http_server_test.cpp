// The monitoring endpoint's HTTP server: routes, the bearer token, and what
// malformed requests and slow clients get.

#include <chrono>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "net/http_server.hpp"

using namespace troupe::net;

namespace {

int connect_to(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

/// Sends `raw`, then reads until the server closes (or 5 s pass).
std::string round_trip(std::uint16_t port, const std::string& raw) {
  int fd = connect_to(port);
  ::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  for (;;) {
    auto n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0)
      break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string get(std::uint16_t port, const std::string& path,
                const std::string& extra = "") {
  return round_trip(port, "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + extra
                              + "Connection: close\r\n\r\n");
}

std::map<std::string, http_handler> routes() {
  return {{"/hello",
           [](const std::string& q) {
             return http_response{200, "text/plain", "hello " + q};
           }},
          {"/fail", [](const std::string&) -> http_response {
             throw std::runtime_error("broken route");
           }}};
}

} // namespace

TEST_CASE("routes, queries, unknown paths and methods") {
  http_server server{{}, routes()};
  auto port = server.port();
  CHECK_THAT(get(port, "/hello?x=1"),
             Catch::StartsWith("HTTP/1.1 200") && Catch::EndsWith("hello x=1"));
  CHECK_THAT(get(port, "/nope"), Catch::StartsWith("HTTP/1.1 404"));
  CHECK_THAT(get(port, "/fail"), Catch::StartsWith("HTTP/1.1 500")
                                     && Catch::Contains("broken route"));
  CHECK_THAT(round_trip(port, "POST /hello HTTP/1.1\r\nHost: x\r\n"
                              "Content-Length: 0\r\nConnection: close\r\n\r\n"),
             Catch::StartsWith("HTTP/1.1 405"));
  // Two requests on one keep-alive connection.
  auto two = round_trip(port, "GET /hello?a HTTP/1.1\r\nHost: x\r\n\r\n"
                              "GET /hello?b HTTP/1.1\r\nHost: x\r\n"
                              "Connection: close\r\n\r\n");
  CHECK_THAT(two, Catch::Contains("hello a") && Catch::Contains("hello b"));
  CHECK(server.counters().requests == 6);
}

TEST_CASE("the bearer token is enforced when set") {
  http_options o;
  o.token = "s3cret";
  http_server server{o, routes()};
  auto port = server.port();
  CHECK_THAT(get(port, "/hello"), Catch::StartsWith("HTTP/1.1 401"));
  CHECK_THAT(get(port, "/hello", "Authorization: Bearer wrong\r\n"),
             Catch::StartsWith("HTTP/1.1 401"));
  CHECK_THAT(get(port, "/hello", "Authorization: Basic s3cret\r\n"),
             Catch::StartsWith("HTTP/1.1 401"));
  CHECK_THAT(get(port, "/hello", "Authorization: Bearer s3cret\r\n"),
             Catch::StartsWith("HTTP/1.1 200"));
  CHECK(server.counters().unauthorized == 3);
}

TEST_CASE("garbage, huge headers and slow clients do not hold the server") {
  http_options o;
  o.timeout = std::chrono::milliseconds{300};
  http_server server{o, routes()};
  auto port = server.port();
  CHECK_THAT(round_trip(port, std::string(3000, '\x07') + "\r\n\r\n"),
             Catch::StartsWith("HTTP/1.1 400"));
  CHECK_THAT(get(port, "/hello", "X-Big: " + std::string(20000, 'a') + "\r\n"),
             Catch::StartsWith("HTTP/1.1 400"));
  // A client that sends half a header and waits is cut off at the timeout;
  // meanwhile others are served.
  int slow = connect_to(port);
  std::string half = "GET /hello HTTP/1.1\r\nHost:";
  ::send(slow, half.data(), half.size(), MSG_NOSIGNAL);
  CHECK_THAT(get(port, "/hello?meanwhile"), Catch::EndsWith("meanwhile"));
  auto t0 = std::chrono::steady_clock::now();
  char c;
  CHECK(::recv(slow, &c, 1, 0) == 0); // closed by the server
  auto waited = std::chrono::steady_clock::now() - t0;
  CHECK(waited < std::chrono::seconds{3});
  ::close(slow);
  // A client that connects and says nothing, likewise.
  int silent = connect_to(port);
  CHECK(::recv(silent, &c, 1, 0) == 0);
  ::close(silent);
  // Beast closes a timed-out socket before the read handler runs and counts
  // it, so the client can see the close first: wait (bounded) for the count.
  auto n = server.counters();
  for (int i = 0; i < 200 && n.timed_out < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
    n = server.counters();
  }
  CHECK(n.bad_requests == 2);
  CHECK(n.timed_out == 2);
  CHECK_THAT(get(port, "/hello?after"), Catch::EndsWith("after"));
}

TEST_CASE("a port in use is refused with the address") {
  http_server first{{}, routes()};
  http_options o;
  o.listen.port = first.port();
  CHECK_THROWS_WITH((http_server{o, routes()}),
                    Catch::Contains("cannot serve HTTP on 127.0.0.1:"
                                    + std::to_string(first.port())));
}
