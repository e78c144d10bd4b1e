#pragma once

// POSIX helpers of the remote_transfer benchmark: loopback TCP sockets whose
// every send and receive is bounded by a timeout, child processes that die
// with their parent, and small statistics. No CAF here.

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdexcept>
#include <string>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace troupe::bench {

using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

inline double median(std::vector<double> xs) {
  if (xs.empty())
    return 0;
  auto mid = xs.begin() + static_cast<std::ptrdiff_t>(xs.size() / 2);
  std::nth_element(xs.begin(), mid, xs.end());
  return *mid;
}

/// Throws std::runtime_error with `what` and errno's text.
[[noreturn]] inline void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

/// Owns a file descriptor.
class fd_guard {
public:
  fd_guard() = default;
  explicit fd_guard(int fd) : fd_(fd) {}
  fd_guard(fd_guard&& x) noexcept : fd_(std::exchange(x.fd_, -1)) {}
  fd_guard& operator=(fd_guard&& x) noexcept {
    std::swap(fd_, x.fd_);
    return *this;
  }
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
  ~fd_guard() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int get() const {
    return fd_;
  }

private:
  int fd_ = -1;
};

/// Bounds every blocking send and receive on `fd` by `seconds` and turns
/// Nagle off (both ends of every benchmark socket do, like CAF's).
inline void tune_socket(int fd, int seconds) {
  timeval tv{seconds, 0};
  int one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0
      || setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0
      || setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
    fail("setsockopt");
}

inline sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

/// Listens on 127.0.0.1:`port` (0: any free port); `bound` gets the port.
inline fd_guard listen_loopback(std::uint16_t port, std::uint16_t& bound) {
  fd_guard fd{::socket(AF_INET, SOCK_STREAM, 0)};
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  auto addr = loopback(port);
  if (fd.get() < 0
      || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0
      || ::listen(fd.get(), 4) != 0)
    fail("listen on 127.0.0.1");
  socklen_t len = sizeof addr;
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  bound = ntohs(addr.sin_port);
  return fd;
}

/// Returns a port that was free a moment ago (for tools that need a number).
inline std::uint16_t free_port() {
  std::uint16_t port = 0;
  listen_loopback(0, port);
  return port;
}

/// Accepts one connection within `timeout_ms`.
inline fd_guard accept_one(int listener, int timeout_ms, int io_seconds) {
  pollfd pfd{listener, POLLIN, 0};
  if (::poll(&pfd, 1, timeout_ms) != 1)
    throw std::runtime_error("no connection within the timeout");
  fd_guard fd{::accept(listener, nullptr, nullptr)};
  if (fd.get() < 0)
    fail("accept");
  tune_socket(fd.get(), io_seconds);
  return fd;
}

inline fd_guard connect_loopback(std::uint16_t port, int io_seconds) {
  fd_guard fd{::socket(AF_INET, SOCK_STREAM, 0)};
  auto addr = loopback(port);
  if (fd.get() < 0
      || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr)
             != 0)
    fail("connect to 127.0.0.1");
  tune_socket(fd.get(), io_seconds);
  return fd;
}

/// Sends all `n` bytes; throws on error, timeout or a closed peer.
inline void send_all(int fd, const void* data, std::size_t n) {
  auto p = static_cast<const char*>(data);
  while (n > 0) {
    auto k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      fail("send");
    p += k;
    n -= static_cast<std::size_t>(k);
  }
}

/// Receives exactly `n` bytes; returns false on a clean EOF before the first
/// byte, throws on error, timeout or EOF in the middle.
inline bool recv_all(int fd, void* data, std::size_t n) {
  auto p = static_cast<char*>(data);
  std::size_t got = 0;
  while (got < n) {
    auto k = ::recv(fd, p + got, n - got, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k == 0 && got == 0)
      return false;
    if (k <= 0)
      fail("recv");
    got += static_cast<std::size_t>(k);
  }
  return true;
}

/// A forked and exec'd process that is killed (SIGKILL) when this handle is
/// destroyed and also when the parent dies (PR_SET_PDEATHSIG). Its stdout is
/// captured through a pipe unless it goes to /dev/null; stderr is inherited.
class child_process {
public:
  child_process(const std::vector<std::string>& argv, bool capture) {
    int fds[2] = {-1, -1};
    if (::pipe2(fds, O_CLOEXEC) != 0)
      fail("pipe");
    auto parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0)
      fail("fork");
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent)
        ::_exit(127);
      int out = capture ? fds[1] : ::open("/dev/null", O_WRONLY);
      ::dup2(out, STDOUT_FILENO);
      std::vector<char*> args;
      for (auto& arg : argv)
        args.push_back(const_cast<char*>(arg.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out_ = fd_guard{fds[0]};
  }

  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  ~child_process() {
    if (pid_ > 0 && status_ < 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  /// Reads one line of the child's stdout within `timeout_s`; false on EOF
  /// or timeout.
  bool read_line(std::string& line, double timeout_s) {
    line.clear();
    auto t0 = clock_type::now();
    for (;;) {
      auto nl = buf_.find('\n');
      if (nl != std::string::npos) {
        line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return true;
      }
      if (!fill(timeout_s - seconds_since(t0)))
        return false;
    }
  }

  /// Reads the child's stdout up to EOF within `timeout_s`; false on timeout.
  bool read_all(std::string& out, double timeout_s) {
    auto t0 = clock_type::now();
    while (!eof_)
      if (!fill(timeout_s - seconds_since(t0)) && !eof_)
        return false;
    out = std::move(buf_);
    buf_.clear();
    return true;
  }

  /// Waits up to `timeout_s` for the exit; then kills. Returns the exit
  /// status as waitpid reports it, or -1 if the child had to be killed.
  int wait(double timeout_s) {
    auto t0 = clock_type::now();
    while (status_ < 0) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        status_ = st;
        return status_;
      }
      if (seconds_since(t0) > timeout_s) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        status_ = 0x7fffffff;
        return -1;
      }
      ::usleep(10'000);
    }
    return status_;
  }

private:
  bool fill(double timeout_s) {
    if (eof_ || timeout_s <= 0)
      return false;
    pollfd pfd{out_.get(), POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(timeout_s * 1000)) != 1)
      return false;
    char tmp[4096];
    auto k = ::read(out_.get(), tmp, sizeof tmp);
    if (k <= 0) {
      eof_ = true;
      return false;
    }
    buf_.append(tmp, static_cast<std::size_t>(k));
    return true;
  }

  pid_t pid_ = -1;
  int status_ = -1;
  fd_guard out_;
  std::string buf_;
  bool eof_ = false;
};

/// Path of the running executable, for re-executing it in another role.
inline std::string self_exe() {
  char path[4096];
  auto n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0)
    fail("readlink /proc/self/exe");
  return std::string(path, static_cast<std::size_t>(n));
}

} // namespace troupe::bench
