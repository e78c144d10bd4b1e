#include "net/guard.hpp"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <set>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "actors/detail/log.hpp"

// Each connection gets two threads that block on their sockets: frames from
// the peer are read header by header (32 bytes to user space, checked) and
// their payloads moved with splice(2) through a pipe, without copying them
// through user space; the other direction is spliced as it comes. A blocking
// relay wakes as soon as bytes arrive, so the extra hop costs little latency.

namespace troupe::net {

namespace {

std::uint32_t read_be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16)
         | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

// BASP 0.17 operations: server_handshake 0 ... heartbeat 6.
constexpr unsigned char client_handshake = 1;
constexpr unsigned char last_operation = 6;
constexpr std::size_t chunk = 1 << 20;

/// Reads exactly n bytes; false on EOF, error or receive timeout.
bool read_exact(int fd, unsigned char* buf, std::size_t n) {
  while (n > 0) {
    auto got = ::recv(fd, buf, n, 0);
    if (got > 0) {
      buf += got;
      n -= static_cast<std::size_t>(got);
    } else if (got < 0 && errno == EINTR) {
      continue;
    } else {
      return false;
    }
  }
  return true;
}

bool write_all(int fd, const unsigned char* buf, std::size_t n) {
  while (n > 0) {
    auto put = ::send(fd, buf, n, MSG_NOSIGNAL);
    if (put > 0) {
      buf += put;
      n -= static_cast<std::size_t>(put);
    } else if (put < 0 && errno == EINTR) {
      continue;
    } else {
      return false;
    }
  }
  return true;
}

/// A pipe for splice(2), as large as the system allows (1 MiB by default).
struct pipe_pair {
  int fd[2] = {-1, -1};
  pipe_pair() {
    if (::pipe2(fd, O_CLOEXEC) != 0)
      throw std::runtime_error(std::string{"pipe: "} + std::strerror(errno));
    ::fcntl(fd[1], F_SETPIPE_SZ, static_cast<int>(chunk));
  }
  ~pipe_pair() {
    ::close(fd[0]);
    ::close(fd[1]);
  }
};

/// Moves up to `limit` bytes (all of them unless EOF or error) from `in` to
/// `out` through the pipe. Returns the bytes moved; stops early only on EOF
/// or error (then less than `limit`).
std::uint64_t splice_bytes(int in, int out, pipe_pair& p, std::uint64_t limit) {
  std::uint64_t moved = 0;
  while (moved < limit) {
    auto want = static_cast<std::size_t>(
        std::min<std::uint64_t>(limit - moved, chunk));
    auto got = ::splice(in, nullptr, p.fd[1], nullptr, want, SPLICE_F_MOVE);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return moved;
    auto left = static_cast<std::size_t>(got);
    while (left > 0) {
      auto put = ::splice(p.fd[0], nullptr, out, nullptr, left, SPLICE_F_MOVE);
      if (put < 0 && errno == EINTR)
        continue;
      if (put <= 0)
        return moved;
      left -= static_cast<std::size_t>(put);
    }
    moved += static_cast<std::uint64_t>(got);
  }
  return moved;
}

void set_receive_timeout(int fd, double seconds) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(seconds);
  tv.tv_usec = static_cast<suseconds_t>((seconds - tv.tv_sec) * 1e6);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

std::string peer_name(const sockaddr_storage& addr) {
  char host[NI_MAXHOST] = {}, port[NI_MAXSERV] = {};
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), sizeof(addr),
                    host, sizeof(host), port, sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV)
      != 0)
    return "?";
  return std::string{host} + ":" + port;
}

} // namespace

std::string basp_guard::check_header(const unsigned char* h, bool first,
                                     std::uint32_t max_payload) {
  if (h[0] > last_operation)
    return "unknown BASP operation " + std::to_string(h[0]);
  if (first && h[0] != client_handshake)
    return "the first frame is not a client handshake (operation "
           + std::to_string(h[0]) + ")";
  auto len = read_be32(h + 4);
  if (len > max_payload)
    return "frame payload of " + std::to_string(len) + " bytes exceeds the "
           + std::to_string(max_payload) + "-byte limit";
  return {};
}

struct basp_guard::impl {
  int listener = -1;
  std::uint16_t port = 0, back = 0;
  guard_options opts;
  guard_counters counters;
  std::thread acceptor;
  std::mutex mtx;
  std::condition_variable all_gone;
  std::set<int> open; ///< sockets of live sessions (to shut down at the end)
  std::uint32_t pending = 0, sessions = 0;
  bool stopping = false;

  int connect_back() {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(back);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0
        || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      if (fd >= 0)
        ::close(fd);
      return -1;
    }
    return fd;
  }

  void relay(int client, std::string peer) {
    int server = connect_back();
    {
      std::lock_guard<std::mutex> guard{mtx};
      if (server >= 0)
        open.insert(server);
    }
    if (server >= 0) {
      int one = 1;
      ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      std::thread down{[this, client, server] {
        try {
          pipe_pair p;
          splice_bytes(server, client, p, ~std::uint64_t{0});
        } catch (const std::exception&) {
        }
        ::shutdown(client, SHUT_RDWR);
        ::shutdown(server, SHUT_RDWR);
      }};
      upstream(client, server, peer);
      ::shutdown(client, SHUT_RDWR);
      ::shutdown(server, SHUT_RDWR);
      down.join();
    }
    std::lock_guard<std::mutex> guard{mtx};
    open.erase(client);
    open.erase(server);
    ::close(client);
    if (server >= 0)
      ::close(server);
    if (--sessions == 0)
      all_gone.notify_all();
  }

  /// Peer to CAF, frame by frame. Returns when either side is done or the
  /// peer broke a rule.
  void upstream(int client, int server, const std::string& peer) {
    bool first = true;
    auto leave_pending = [&] {
      if (!first)
        return;
      first = false;
      std::lock_guard<std::mutex> guard{mtx};
      --pending;
    };
    set_receive_timeout(client, opts.handshake_timeout);
    unsigned char header[header_size];
    try {
      pipe_pair p;
      for (;;) {
        if (!read_exact(client, header, header_size)) {
          if (first && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            ++counters.timed_out;
            actors::detail::log().warn("guard: {} sent no handshake in time",
                                       peer);
          }
          break;
        }
        auto why = check_header(header, first, opts.max_payload);
        if (!why.empty()) {
          ++counters.refused;
          actors::detail::log().warn("guard: cut off {}: {}", peer, why);
          break;
        }
        if (first) {
          leave_pending();
          set_receive_timeout(client, 0);
        }
        auto len = read_be32(header + 4);
        counters.bytes_in += header_size + len;
        if (!write_all(server, header, header_size)
            || splice_bytes(client, server, p, len) < len)
          break;
      }
    } catch (const std::exception& e) {
      actors::detail::log().warn("guard: {}: {}", peer, e.what());
    }
    leave_pending();
  }

  void accept_loop() {
    for (;;) {
      sockaddr_storage addr{};
      socklen_t len = sizeof(addr);
      int fd = ::accept4(listener, reinterpret_cast<sockaddr*>(&addr), &len,
                         SOCK_CLOEXEC);
      if (fd < 0) {
        auto err = errno;
        {
          std::lock_guard<std::mutex> guard{mtx};
          if (stopping)
            return; // the listener was shut down
        }
        if (err != EINTR && err != ECONNABORTED) {
          actors::detail::log().warn("guard: accept: {}", std::strerror(err));
          // Out of descriptors (or worse): give the sessions time to end.
          std::this_thread::sleep_for(std::chrono::milliseconds{50});
        }
        continue;
      }
      ++counters.accepted;
      std::lock_guard<std::mutex> guard{mtx};
      if (stopping || pending >= opts.max_pending) {
        ++counters.refused;
        ::close(fd);
        continue;
      }
      ++pending;
      ++sessions;
      open.insert(fd);
      std::thread{[this, fd, peer = peer_name(addr)] {
        relay(fd, peer);
      }}.detach();
    }
  }
};

basp_guard::basp_guard(const endpoint& front, std::uint16_t back,
                       guard_options opts)
    : impl_(std::make_unique<impl>()) {
  impl_->back = back;
  impl_->opts = opts;
  auto fail = [&](const std::string& why) {
    if (impl_->listener >= 0)
      ::close(impl_->listener);
    throw std::runtime_error("cannot listen on " + front.host + ":"
                             + std::to_string(front.port) + ": " + why);
  };
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  auto host = front.host == "*" ? std::string{"0.0.0.0"} : front.host;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(front.port).c_str(),
                             &hints, &res);
      rc != 0)
    fail(::gai_strerror(rc));
  impl_->listener
      = ::socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, 0);
  int one = 1;
  if (impl_->listener >= 0)
    ::setsockopt(impl_->listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  bool ok = impl_->listener >= 0
            && ::bind(impl_->listener, res->ai_addr, res->ai_addrlen) == 0
            && ::listen(impl_->listener, 128) == 0;
  ::freeaddrinfo(res);
  if (!ok)
    fail(std::strerror(errno));
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(impl_->listener, reinterpret_cast<sockaddr*>(&addr), &len);
  impl_->port = ntohs(addr.ss_family == AF_INET6
                          ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                          : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  impl_->acceptor = std::thread{[this] {
    // splice(2) to a socket the peer closed raises SIGPIPE (MSG_NOSIGNAL
    // exists only for send): block it in the guard's threads (the sessions
    // inherit the mask), so the call fails with EPIPE instead of killing the
    // process.
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, nullptr);
    impl_->accept_loop();
  }};
}

basp_guard::~basp_guard() {
  auto& g = *impl_;
  {
    std::lock_guard<std::mutex> guard{g.mtx};
    g.stopping = true;
    for (int fd : g.open)
      ::shutdown(fd, SHUT_RDWR);
  }
  ::shutdown(g.listener, SHUT_RDWR);
  g.acceptor.join();
  ::close(g.listener);
  std::unique_lock<std::mutex> lock{g.mtx};
  g.all_gone.wait_for(lock, std::chrono::seconds{5},
                      [&] { return g.sessions == 0; });
  // Sessions still running after that reference *impl_: keep it alive.
  if (g.sessions > 0) {
    lock.unlock();
    (void)impl_.release();
  }
}

std::uint16_t basp_guard::port() const noexcept {
  return impl_->port;
}

const guard_counters& basp_guard::counters() const noexcept {
  return impl_->counters;
}

} // namespace troupe::net
