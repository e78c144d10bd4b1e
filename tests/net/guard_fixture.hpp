// The port guard's test fixture (tests/net/guard_test.cpp): BASP 0.17
// headers by hand, a tiny TCP sink that records what reaches the server,
// and socket helpers. No CAF.

#pragma once

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

namespace guard_fixture {

using troupe::net::endpoint;
using clk = std::chrono::steady_clock;
using bytes = std::vector<unsigned char>;

inline void put_be(bytes& out, std::uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i)
    out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

/// A BASP 0.17 header.
inline bytes header(unsigned char op, std::uint32_t len, std::uint64_t dest = 0,
                    unsigned char flags = 0) {
  bytes h{op, 0, 0, flags};
  put_be(h, len, 4);
  put_be(h, 0, 8);
  put_be(h, 7, 8);
  put_be(h, dest, 8);
  return h;
}

inline const std::string key(32, 'K'); // stands for a node id

/// A client handshake carrying `key`.
inline bytes handshake() {
  auto h = header(1, 32);
  h.insert(h.end(), key.begin(), key.end());
  return h;
}

/// Accepts connections on 127.0.0.1 and records every byte, per connection.
struct sink {
  int listener = -1;
  std::uint16_t port = 0;
  std::mutex mtx;
  std::vector<bytes> got;
  bool stop = false;
  std::thread thread;

  sink() {
    listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
    REQUIRE(::listen(listener, 64) == 0);
    socklen_t len = sizeof(a);
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    thread = std::thread{[this] { run(); }};
  }
  ~sink() {
    {
      std::lock_guard<std::mutex> guard{mtx};
      stop = true;
    }
    thread.join();
    ::close(listener);
  }
  void run() {
    std::vector<pollfd> fds{{listener, POLLIN, 0}};
    std::vector<std::size_t> index{0};
    for (;;) {
      {
        std::lock_guard<std::mutex> guard{mtx};
        if (stop)
          break;
      }
      ::poll(fds.data(), fds.size(), 20);
      if (fds[0].revents & POLLIN) {
        int fd = ::accept(listener, nullptr, nullptr);
        std::lock_guard<std::mutex> guard{mtx};
        fds.push_back({fd, POLLIN, 0});
        index.push_back(got.size());
        got.emplace_back();
      }
      unsigned char buf[1 << 16];
      for (std::size_t i = 1; i < fds.size(); ++i)
        if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP))) {
          auto n = ::recv(fds[i].fd, buf, sizeof(buf), 0);
          if (n <= 0) {
            ::close(fds[i].fd);
            fds[i].fd = -1;
            continue;
          }
          std::lock_guard<std::mutex> guard{mtx};
          auto& g = got[index[i]];
          g.insert(g.end(), buf, buf + n);
        }
    }
    for (std::size_t i = 1; i < fds.size(); ++i)
      if (fds[i].fd >= 0)
        ::close(fds[i].fd);
  }
  /// Bytes received on connection `i` (0 if it does not exist).
  std::size_t size(std::size_t i) {
    std::lock_guard<std::mutex> guard{mtx};
    return i < got.size() ? got[i].size() : 0;
  }
  std::size_t connections() {
    std::lock_guard<std::mutex> guard{mtx};
    return got.size();
  }
};

/// Connects to 127.0.0.1:port, from `from` if given.
inline int connect_to(std::uint16_t port, const char* from = nullptr) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (from != nullptr) {
    sockaddr_in b{};
    b.sin_family = AF_INET;
    ::inet_pton(AF_INET, from, &b.sin_addr);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&b), sizeof(b)) == 0);
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  return fd;
}

inline void send_all(int fd, const bytes& b) {
  REQUIRE(::send(fd, b.data(), b.size(), MSG_NOSIGNAL)
          == static_cast<ssize_t>(b.size()));
}

/// True if the peer closed `fd` within `seconds`.
inline bool closed_within(int fd, double seconds) {
  auto end = clk::now() + std::chrono::duration<double>(seconds);
  while (clk::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) == 1) {
      unsigned char b[256];
      auto n = ::recv(fd, b, sizeof(b), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN))
        return true;
    }
  }
  return false;
}

/// Waits (at most 5 s) until `pred` holds.
template <class F>
inline bool eventually(F pred) {
  auto end = clk::now() + std::chrono::seconds{5};
  while (clk::now() < end) {
    if (pred())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  return pred();
}

inline endpoint front() {
  return {"127.0.0.1", 0};
}

} // namespace guard_fixture
