#include "net/guard_session.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include "messages/wire_check.hpp"

// One connection: two threads that block on their sockets. Frames from the
// peer are read into a buffer (one receive takes whatever has arrived, often
// several frames), checked, and forwarded to CAF once complete, several per
// send; a frame above max_buffered_payload is streamed with splice(2) once the
// bytes still missing fit the unreceived budget. The other direction is
// spliced as it comes. A blocking relay wakes as soon as bytes arrive, so the
// extra hop costs little latency.

namespace troupe::net {

namespace {

using clock = std::chrono::steady_clock;

using namespace basp_op;
/// Our actors a peer may answer before admission, at most.
constexpr std::size_t max_callers = 256;
constexpr std::size_t chunk = 1 << 20;
constexpr std::size_t min_buffer = 64 << 10;
/// A streamed frame's bytes checked before its header goes to CAF: enough
/// for the stages and the type names at a message's front.
constexpr std::size_t checked_prefix = 64 << 10;

/// Reads exactly n bytes; false on EOF or error.
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

/// Moves up to `limit` bytes from `in` to `out` through the pipe, calling
/// `moved(n)` after each piece. Returns the bytes moved; stops early only on
/// EOF, error or receive timeout (then less than `limit`, errno set).
template <class F>
std::uint64_t splice_bytes(int in, int out, pipe_pair& p, std::uint64_t limit,
                           F moved) {
  std::uint64_t done = 0;
  while (done < limit) {
    auto want = static_cast<std::size_t>(
        std::min<std::uint64_t>(limit - done, chunk));
    auto got = ::splice(in, nullptr, p.fd[1], nullptr, want, SPLICE_F_MOVE);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return done;
    auto left = static_cast<std::size_t>(got);
    while (left > 0) {
      auto put = ::splice(p.fd[0], nullptr, out, nullptr, left, SPLICE_F_MOVE);
      if (put < 0 && errno == EINTR)
        continue;
      if (put <= 0)
        return done;
      left -= static_cast<std::size_t>(put);
    }
    done += static_cast<std::uint64_t>(got);
    moved(static_cast<std::uint64_t>(got));
  }
  return done;
}

void set_receive_timeout(int fd, double seconds) {
  seconds = std::max(seconds, 0.001);
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(seconds);
  tv.tv_usec = static_cast<suseconds_t>((seconds - tv.tv_sec) * 1e6);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

double seconds_since(clock::time_point t) {
  return std::chrono::duration<double>(clock::now() - t).count();
}

} // namespace

void basp_guard::impl::relay(std::shared_ptr<guard_session> s) {
  std::thread pump; // with TLS: the peer's bytes, decrypted, into s->client
  if (s->tls >= 0)
    pump = open_tls(*s);
  int server = s->client >= 0 ? connect_back() : -1;
  {
    std::lock_guard<std::mutex> guard{mtx};
    s->server = server;
    if (stopping && server >= 0)
      ::shutdown(server, SHUT_RDWR);
  }
  if (server >= 0) {
    int one = 1;
    ::setsockopt(s->tls >= 0 ? s->tls : s->client, IPPROTO_TCP, TCP_NODELAY,
                 &one, sizeof(one));
    ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::thread down{[this, s] {
      try {
        downstream(*s);
      } catch (const std::exception&) {
      }
      ::shutdown(s->client, SHUT_RDWR);
      ::shutdown(s->server, SHUT_RDWR);
    }};
    try {
      upstream(*s);
    } catch (const std::exception& e) {
      note(s->peer + ": " + e.what());
    }
    ::shutdown(s->client, SHUT_RDWR);
    ::shutdown(server, SHUT_RDWR);
    down.join();
  } else if (s->client >= 0) {
    note("cannot reach CAF's port for " + s->peer);
  }
  if (pump.joinable()) {
    ::shutdown(s->client, SHUT_RDWR); // ends the pump
    pump.join();
  }
  std::lock_guard<std::mutex> guard{mtx};
  leave_pending(*s);
  live.remove(s);
  for (int fd : {s->client, server, s->tls})
    if (fd >= 0)
      ::close(fd);
  if (--sessions == 0)
    all_gone.notify_all();
}

void basp_guard::impl::downstream(guard_session& s) {
  pipe_pair p;
  unsigned char h[header_size];
  while (!s.admitted) {
    if (!read_exact(s.server, h, header_size))
      return;
    if (h[0] == direct_message) {
      std::lock_guard<std::mutex> guard{s.callers_mtx};
      if (s.callers.size() < max_callers)
        s.callers.insert(read_be64(h + 16));
    }
    auto len = read_be32(h + 4);
    if (!write_all(s.client, h, header_size)
        || splice_bytes(s.server, s.client, p, len, [](auto) {}) < len)
      return;
  }
  splice_bytes(s.server, s.client, p, ~std::uint64_t{0}, [](auto) {});
}

void basp_guard::impl::upstream(guard_session& s) {
  bool first = true; // no complete client handshake yet
  std::vector<unsigned char> buf(min_buffer);
  std::size_t start = 0, end = 0;
  std::unique_ptr<pipe_pair> pipe; // for large frames only
  auto last_bytes = clock::now();
  auto cut = [&](const std::string& why) {
    ++counters.refused;
    note("cut off " + s.peer + ": " + why);
  };
  // Receives more bytes: true if some arrived. `frame` is the size of the
  // frame at `start` (header_size while its header is incomplete).
  auto fill = [&](std::size_t frame) -> bool {
    for (;;) {
      if (end == buf.size()) {
        if (start > 0) {
          std::memmove(buf.data(), buf.data() + start, end - start);
          end -= start;
          start = 0;
        }
        if (end == buf.size()) // grow with the bytes in hand, up to the frame
          buf.resize(std::max(std::min(2 * buf.size(), frame), end + 1));
      }
      if (first) {
        auto left = opts.handshake_timeout - seconds_since(s.accepted);
        if (left <= 0) {
          ++counters.timed_out;
          note(s.peer + " sent no complete handshake within "
               + seconds_text(opts.handshake_timeout) + " of connecting");
          return false;
        }
        set_receive_timeout(s.client, left);
      }
      auto got = ::recv(s.client, buf.data() + end, buf.size() - end, 0);
      if (got > 0) {
        end += static_cast<std::size_t>(got);
        last_bytes = clock::now();
        return true;
      }
      if (got < 0 && errno == EINTR)
        continue;
      if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
        return false; // closed
      if (first)
        continue; // the deadline check above ends it
      if (end > start) {
        ++counters.timed_out;
        cut("a frame's bytes stopped flowing for "
            + seconds_text(seconds_since(last_bytes)));
        return false;
      }
      if (!s.admitted && seconds_since(s.accepted) > opts.admit_timeout) {
        ++counters.timed_out;
        cut("not admitted within " + seconds_text(opts.admit_timeout)
            + " of connecting");
        return false;
      }
    }
  };
  // Streams the frame at `start` whose payload exceeds max_buffered_payload:
  // its header goes to CAF once the bytes still missing fit the budgets.
  auto stream_large = [&](std::uint32_t len) -> bool {
    std::uint64_t missing = 0;
    bool checked = false; // its first bytes, before CAF sees the header
    for (;;) {
      auto have = std::min<std::size_t>(end - start - header_size, len);
      missing = len - have;
      if (missing == 0)
        return true; // complete: checked and forwarded as any other frame
      if (have >= std::min<std::size_t>(len, checked_prefix)) {
        if (!checked) {
          auto why = messages::unsafe_payload(buf.data() + start + header_size,
                                              have, false);
          if (!why.empty()) {
            cut("a frame of " + std::to_string(len) + " bytes: " + why);
            return false;
          }
          checked = true;
        }
        if (missing <= opts.max_unreceived_per_connection && reserve(missing))
          break;
      }
      if (!fill(header_size + len))
        return false;
    }
    counters.bytes_in += end - start;
    if (!write_all(s.server, buf.data() + start, end - start))
      return false;
    start = end = 0;
    if (!pipe)
      pipe = std::make_unique<pipe_pair>();
    auto moved = splice_bytes(s.client, s.server, *pipe, missing,
                              [&](std::uint64_t n) {
                                release(n);
                                counters.bytes_in += n;
                              });
    if (moved < missing) {
      auto err = errno;
      release(missing - moved);
      if (err == EAGAIN || err == EWOULDBLOCK) {
        ++counters.timed_out;
        cut("a frame's bytes stopped flowing for "
            + seconds_text(opts.frame_timeout) + " ("
            + std::to_string(missing - moved) + " of " + std::to_string(len)
            + " bytes missing)");
      }
      return false;
    }
    return true;
  };
  for (;;) {
    std::size_t from = start; // checked frames not yet forwarded: [from, start)
    auto flush = [&] {
      bool ok = start == from
                || write_all(s.server, buf.data() + from, start - from);
      from = start;
      return ok;
    };
    while (end - start >= header_size) {
      const unsigned char* h = buf.data() + start;
      frame_verdict verdict;
      if (s.admitted) {
        verdict = check_frame(h, {first, true, nullptr}, opts);
      } else {
        std::lock_guard<std::mutex> guard{s.callers_mtx};
        verdict = check_frame(h, {first, false, &s.callers}, opts);
      }
      if (verdict.action == frame_action::refuse) {
        flush();
        cut(verdict.reason);
        return;
      }
      auto len = read_be32(h + 4);
      if (len > opts.max_buffered_payload && end - start < header_size + len) {
        if (!flush() || !stream_large(len))
          return;
        from = start;
        if (end - start < header_size + len)
          continue; // streamed: the buffer holds what follows
      }
      if (end - start < header_size + len)
        break; // wait for the rest of the frame
      h = buf.data() + start;
      auto why = messages::unsafe_payload(h + header_size, len, true);
      if (!why.empty()) {
        flush();
        cut("a frame: " + why);
        return;
      }
      if (h[0] == client_handshake) {
        std::lock_guard<std::mutex> guard{mtx};
        s.handshake.assign(reinterpret_cast<const char*>(h + header_size), len);
        for (const auto& key : vouched)
          if (!s.admitted && s.handshake.find(key) != std::string::npos) {
            s.admitted = true;
            leave_pending(s);
            ++counters.admitted;
          }
      }
      if (first) {
        first = false;
        set_receive_timeout(s.client, opts.frame_timeout);
      }
      counters.bytes_in += header_size + len;
      if (verdict.action == frame_action::drop) {
        if (!flush())
          return;
        ++counters.dropped;
        start += header_size + len;
        from = start;
      } else {
        start += header_size + len;
      }
    }
    if (!flush())
      return;
    if (start == end)
      start = end = 0;
    std::size_t frame = header_size;
    if (end - start >= header_size)
      frame += read_be32(buf.data() + start + 4);
    if (!fill(frame))
      return;
  }
}

std::string seconds_text(double s) {
  char out[32];
  std::snprintf(out, sizeof(out), "%g s", s);
  return out;
}

} // namespace troupe::net
