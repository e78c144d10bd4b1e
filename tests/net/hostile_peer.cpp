// troupe_hostile_peer: a misbehaving TCP peer for robustness checks of a
// published CAF port (BASP, plaintext or TLS). POSIX sockets only, no CAF.
//
//   troupe_hostile_peer --mode=random|truncated|oversized|silent|slowloris
//                       --host=127.0.0.1 --port=N [--seconds=S]
//                       [--connections=K] [--seed=S] [--bytes=B]
//                       [--payload-len=L] [--op=O] [--interval=I]
//                       [--bind=ADDR]
//
//   random     send B (default 65536) random bytes, then close
//   truncated  send the first 13 bytes of a BASP client handshake header
//              (of 32), then close
//   oversized  send a complete 32-byte BASP header claiming a payload of L
//              bytes (default 0xFFFFFFF0), stay silent for S seconds, close
//   silent     connect and say nothing for S seconds (default 30), close
//   slowloris  send a client handshake (header and a 32-byte payload) one
//              byte every I seconds (default 8) for S seconds (default 60),
//              or until the server has closed every connection
//
// --bind=ADDR connects from that source address (e.g. 127.0.0.2: another
// host as far as per-address limits go).
//
// K connections (default 1) are opened at once and attacked in parallel.
// Every step has a timeout. Reports on stderr what it did and when the
// server closed each connection; exits 0 when done, 1 when it could not
// connect, 2 on bad usage.

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <netdb.h>
#include <poll.h>
#include <random>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace {

using clk = std::chrono::steady_clock;

struct options {
  std::string mode;
  std::string host = "127.0.0.1";
  int port = 0;
  double seconds = -1; // mode default
  int connections = 1;
  std::uint64_t seed = 1;
  std::size_t bytes = 65536;
  std::uint32_t payload_len = 0xFFFFFFF0u;
  int op = 1; // BASP client_handshake
  double interval = 8;
  std::string bind;
};

struct conn {
  int fd = -1;
  clk::time_point opened;
  double closed_by_peer_ms = -1; // -1: still open when we closed it
  std::size_t received = 0;
};

double ms_since(clk::time_point t) {
  return std::chrono::duration<double, std::milli>(clk::now() - t).count();
}

void usage() {
  std::fprintf(stderr,
               "usage: troupe_hostile_peer --mode=random|truncated|oversized|"
               "silent --port=N [--host=H] [--seconds=S] [--connections=K]\n"
               "       [--seed=S] [--bytes=B] [--payload-len=L] [--op=O]\n");
}

bool parse(int argc, char** argv, options& o) {
  std::map<std::string, std::string> kv;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto eq = a.find('=');
    if (a.rfind("--", 0) != 0 || eq == std::string::npos) {
      std::fprintf(stderr, "hostile_peer: bad argument '%s'\n", argv[i]);
      return false;
    }
    kv[a.substr(2, eq - 2)] = a.substr(eq + 1);
  }
  try {
    for (auto& [k, v] : kv) {
      if (k == "mode")
        o.mode = v;
      else if (k == "host")
        o.host = v;
      else if (k == "port")
        o.port = std::stoi(v);
      else if (k == "seconds")
        o.seconds = std::stod(v);
      else if (k == "connections")
        o.connections = std::stoi(v);
      else if (k == "seed")
        o.seed = std::stoull(v);
      else if (k == "bytes")
        o.bytes = std::stoull(v);
      else if (k == "payload-len")
        o.payload_len = static_cast<std::uint32_t>(std::stoull(v, nullptr, 0));
      else if (k == "op")
        o.op = std::stoi(v, nullptr, 0);
      else if (k == "interval")
        o.interval = std::stod(v);
      else if (k == "bind")
        o.bind = v;
      else {
        std::fprintf(stderr, "hostile_peer: unknown option --%s\n", k.c_str());
        return false;
      }
    }
  } catch (const std::exception&) {
    std::fprintf(stderr, "hostile_peer: bad number in the options\n");
    return false;
  }
  if (o.mode != "random" && o.mode != "truncated" && o.mode != "oversized"
      && o.mode != "silent" && o.mode != "slowloris") {
    std::fprintf(stderr, "hostile_peer: --mode must be random, truncated, "
                         "oversized, silent or slowloris\n");
    return false;
  }
  if (o.port <= 0 || o.port > 65535 || o.connections < 1 || o.op < 0
      || o.op > 255 || !(o.interval > 0)) {
    std::fprintf(stderr, "hostile_peer: need --port=1..65535, "
                         "--connections>=1, --op=0..255, --interval>0\n");
    return false;
  }
  if (o.seconds < 0)
    o.seconds = o.mode == "silent"      ? 30
                : o.mode == "oversized" ? 5
                : o.mode == "slowloris" ? 60
                                        : 0;
  return true;
}

/// Non-blocking connect with a 5 s timeout; the socket stays non-blocking.
int connect_to(const options& o) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  auto port = std::to_string(o.port);
  if (getaddrinfo(o.host.c_str(), port.c_str(), &hints, &res) != 0)
    return -1;
  int fd = -1;
  for (auto* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK,
                ai->ai_protocol);
    if (fd < 0)
      continue;
    int rc = 0;
    if (!o.bind.empty()) {
      addrinfo* local = nullptr;
      addrinfo bh{};
      bh.ai_family = ai->ai_family;
      bh.ai_socktype = SOCK_STREAM;
      rc = getaddrinfo(o.bind.c_str(), "0", &bh, &local) == 0
               ? bind(fd, local->ai_addr, local->ai_addrlen)
               : -1;
      if (local != nullptr)
        freeaddrinfo(local);
    }
    if (rc == 0)
      rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = ETIMEDOUT;
      socklen_t len = sizeof(err);
      if (poll(&p, 1, 5000) == 1)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
    }
    if (rc != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  return fd;
}

/// Drains what the server sends (its BASP or TLS handshake); records when it
/// closes the connection.
void drain(conn& c) {
  if (c.fd < 0 || c.closed_by_peer_ms >= 0)
    return;
  char buf[4096];
  for (;;) {
    ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
    if (n > 0) {
      c.received += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    if (n < 0 && errno == EINTR)
      continue;
    c.closed_by_peer_ms = ms_since(c.opened); // EOF or reset
    return;
  }
}

/// Writes all of `data` within 10 s; false when the peer went away.
bool send_all(conn& c, const std::vector<unsigned char>& data) {
  std::size_t off = 0;
  auto start = clk::now();
  while (off < data.size() && ms_since(start) < 10000) {
    ssize_t n = send(c.fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      break;
    drain(c);
    pollfd p{c.fd, POLLOUT, 0};
    poll(&p, 1, 100);
  }
  if (off < data.size())
    std::fprintf(stderr, "hostile_peer: sent only %zu of %zu bytes (%s)\n", off,
                 data.size(), std::strerror(errno));
  return off == data.size();
}

void put_be(std::vector<unsigned char>& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i)
    out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

/// A BASP 0.17 header (32 bytes, network byte order): operation, 2 padding
/// bytes, flags, payload_len (u32), operation_data (u64; 3 = BASP version),
/// source_actor (u64), dest_actor (u64).
std::vector<unsigned char> basp_header(int op, std::uint32_t payload_len) {
  std::vector<unsigned char> h;
  put_be(h, static_cast<std::uint64_t>(op), 1);
  put_be(h, 0, 3);
  put_be(h, payload_len, 4);
  put_be(h, 3, 8);
  put_be(h, 0, 8);
  put_be(h, 0, 8);
  return h;
}

/// Waits up to `seconds`, draining every open connection.
void hold(std::vector<conn>& cs, double seconds) {
  auto start = clk::now();
  for (;;) {
    std::vector<pollfd> ps;
    for (auto& c : cs) {
      drain(c);
      if (c.fd >= 0 && c.closed_by_peer_ms < 0)
        ps.push_back({c.fd, POLLIN, 0});
    }
    double left = seconds * 1000 - ms_since(start);
    if (left <= 0 || ps.empty())
      return;
    poll(ps.data(), ps.size(), static_cast<int>(std::min(left, 200.0)) + 1);
  }
}

/// Sends `data` one byte per `interval` seconds on every connection still
/// open, for `seconds` in all or until the server has closed every one.
void trickle(std::vector<conn>& cs, const std::vector<unsigned char>& data,
             double interval, double seconds) {
  auto start = clk::now();
  for (std::size_t i = 0; ms_since(start) < seconds * 1000; ++i) {
    bool open = false;
    for (auto& c : cs) {
      drain(c);
      if (c.closed_by_peer_ms < 0 && i < data.size())
        send(c.fd, data.data() + i, 1, MSG_NOSIGNAL);
      open = open || (c.fd >= 0 && c.closed_by_peer_ms < 0);
    }
    if (!open)
      return;
    hold(cs, std::min(interval, seconds - ms_since(start) / 1000));
  }
}

} // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) {
    usage();
    return 2;
  }
  std::mt19937_64 rng{o.seed};
  std::vector<conn> cs(static_cast<std::size_t>(o.connections));
  for (auto& c : cs) {
    c.opened = clk::now();
    c.fd = connect_to(o);
    if (c.fd < 0) {
      std::fprintf(stderr, "hostile_peer: cannot connect to %s:%d (%s)\n",
                   o.host.c_str(), o.port, std::strerror(errno));
      for (auto& d : cs)
        if (d.fd >= 0)
          close(d.fd);
      return 1;
    }
  }
  std::fprintf(stderr, "hostile_peer: %d connection(s) to %s:%d open\n",
               o.connections, o.host.c_str(), o.port);

  std::vector<unsigned char> payload;
  if (o.mode == "truncated") {
    payload = basp_header(o.op, 64);
    payload.resize(13);
  } else if (o.mode == "oversized") {
    payload = basp_header(o.op, o.payload_len);
  } else if (o.mode == "slowloris") {
    payload = basp_header(o.op, 32);
    payload.resize(payload.size() + 32, 0);
  }
  auto start = clk::now();
  std::size_t sent_ok = 0;
  for (auto& c : cs) {
    if (o.mode == "random") { // different bytes on every connection
      payload.resize(o.bytes);
      for (auto& b : payload)
        b = static_cast<unsigned char>(rng());
    }
    if (!payload.empty() && o.mode != "slowloris")
      sent_ok += send_all(c, payload) ? 1 : 0;
  }
  if (o.mode == "slowloris") {
    std::fprintf(stderr,
                 "hostile_peer: slowloris, one byte every %.1f s for %.1f s\n",
                 o.interval, o.seconds);
    trickle(cs, payload, o.interval, o.seconds);
    o.seconds = 0;
  }
  std::fprintf(stderr,
               "hostile_peer: mode=%s sent %zu bytes on %zu/%d connection(s) "
               "(op=%d payload-len=%u), holding %.1f s\n",
               o.mode.c_str(), payload.size(), sent_ok, o.connections, o.op,
               o.mode == "oversized" ? o.payload_len : 0u, o.seconds);
  // Even with --seconds=0 give the server a moment to react, so the report
  // says whether it dropped the connection.
  hold(cs, o.seconds > 0 ? o.seconds : 0.5);

  int closed = 0;
  double first = -1, last = -1;
  std::size_t received = 0;
  for (auto& c : cs) {
    received += c.received;
    if (c.closed_by_peer_ms >= 0) {
      ++closed;
      first = first < 0 ? c.closed_by_peer_ms
                        : std::min(first, c.closed_by_peer_ms);
      last = std::max(last, c.closed_by_peer_ms);
    }
    close(c.fd);
  }
  std::fprintf(stderr,
               "hostile_peer: done after %.0f ms; server closed %d of %d "
               "connection(s)",
               ms_since(start), closed, o.connections);
  if (closed > 0)
    std::fprintf(stderr, " (after %.0f..%.0f ms)", first, last);
  std::fprintf(stderr, "; received %zu bytes from it\n", received);
  return 0;
}
