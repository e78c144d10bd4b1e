#include "net/guard.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

#include "actors/detail/log.hpp"
#include "net/guard_session.hpp"

// The listener, its limits, admission and the refusal log; one connection's
// relay is in guard_session.cpp.

namespace troupe::net {

namespace {

using namespace basp_op;
constexpr unsigned char down_message = 5;
constexpr unsigned char last_operation = 6;
// caf::io::basp::header::named_receiver_flag.
constexpr unsigned char named_receiver = 0x01;

frame_verdict refuse(std::string why) {
  return {frame_action::refuse, std::move(why)};
}

std::string too_large(const char* what, std::uint32_t len,
                      std::uint32_t limit) {
  return std::string{what} + " payload of " + std::to_string(len)
         + " bytes exceeds the " + std::to_string(limit) + "-byte limit";
}

/// Host and port of a peer, numerically.
std::pair<std::string, std::string> peer_name(const sockaddr_storage& addr) {
  char host[NI_MAXHOST] = {}, port[NI_MAXSERV] = {};
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), sizeof(addr),
                    host, sizeof(host), port, sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV)
      != 0)
    return {"?", "?"};
  return {host, port};
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
    return too_large("frame", len, max_payload);
  return {};
}

frame_verdict basp_guard::check_frame(const unsigned char* h,
                                      const frame_rules& rules,
                                      const guard_options& opts) {
  if (rules.first && h[0] == 0x16 && h[1] == 0x03)
    return refuse("a TLS client at a plaintext port: start the coordinator "
                  "with --tls-cert, --tls-key and --tls-ca too, or the node "
                  "without them");
  if (auto why = check_header(h, rules.first, opts.max_payload); !why.empty())
    return refuse(why);
  auto op = h[0];
  auto len = read_be32(h + 4);
  if (op == client_handshake && len > opts.max_handshake)
    return refuse(too_large("client handshake", len, opts.max_handshake));
  if (rules.admitted)
    return {};
  if (len > opts.max_unadmitted_payload)
    return refuse(too_large("before admission, a frame", len,
                            opts.max_unadmitted_payload));
  auto dest = read_be64(h + 24);
  auto addressable = [&] {
    return dest == opts.registrar_id
           || (rules.callers != nullptr && rules.callers->count(dest) > 0);
  };
  auto not_registrar = [&](const char* what) {
    return refuse(std::string{what} + " actor " + std::to_string(dest)
                  + " before the registrar admitted the node (only the "
                    "registrar, actor "
                  + std::to_string(opts.registrar_id)
                  + ", and actors that sent it a message may be addressed)");
  };
  switch (op) {
  case server_handshake:
    return refuse("a server handshake from a client");
  case direct_message:
    if ((h[3] & named_receiver) != 0)
      return {frame_action::drop,
              "a message to a CAF actor by name (SpawnServ, ConfigServ) "
              "before admission"};
    if (!addressable())
      return not_registrar("a message to");
    return {};
  case routed_message:
    return refuse("a routed message before admission");
  case monitor_message:
    if (!addressable())
      return not_registrar("a monitor of");
    return {};
  case down_message:
  default: // client handshake, heartbeat
    return {};
  }
}

void basp_guard::impl::leave_pending(guard_session& s) {
  if (!s.pending)
    return;
  s.pending = false;
  --pending;
  auto i = pending_at.find(s.address);
  if (i != pending_at.end() && --i->second == 0)
    pending_at.erase(i);
}

bool basp_guard::impl::reserve(std::uint64_t n) {
  auto now = counters.unreceived.load();
  do {
    if (now + n > opts.max_unreceived)
      return false;
  } while (!counters.unreceived.compare_exchange_weak(now, now + n));
  auto peak = counters.unreceived_peak.load();
  while (now + n > peak
         && !counters.unreceived_peak.compare_exchange_weak(peak, now + n)) {
  }
  return true;
}

void basp_guard::impl::release(std::uint64_t n) {
  counters.unreceived -= n;
}

int basp_guard::impl::connect_back() {
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

void basp_guard::impl::accept_loop() {
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
        note(std::string{"accept: "} + std::strerror(err));
        // Out of descriptors (or worse): give the sessions time to end.
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
      }
      continue;
    }
    ++counters.accepted;
    auto [host, port] = peer_name(addr);
    auto s = std::make_shared<guard_session>();
    (front ? s->tls : s->client) = fd;
    s->address = host;
    s->peer = host + ":" + port;
    s->accepted = clock::now();
    std::string why;
    {
      std::lock_guard<std::mutex> guard{mtx};
      auto& here = pending_at[host];
      if (stopping)
        why = "shutting down";
      else if (pending >= opts.max_pending)
        why = std::to_string(pending)
              + " connections are not admitted yet (the limit)";
      else if (here >= opts.max_pending_per_address)
        why = std::to_string(here) + " connections from " + host
              + " are not admitted yet (the per-address limit)";
      if (why.empty()) {
        ++here;
        ++pending;
        ++sessions;
        live.push_back(s);
      } else if (here == 0) {
        pending_at.erase(host);
      }
    }
    if (!why.empty()) {
      ++counters.refused;
      ::close(fd);
      note("refused " + s->peer + ": " + why);
      continue;
    }
    std::thread{[this, s] { relay(s); }}.detach();
  }
}

void basp_guard::admit(const std::string& node_key) {
  auto& g = *impl_;
  if (node_key.empty())
    return;
  std::lock_guard<std::mutex> guard{g.mtx};
  for (auto& s : g.live)
    if (!s->admitted && s->handshake.find(node_key) != std::string::npos) {
      s->admitted = true;
      g.leave_pending(*s);
      ++g.counters.admitted;
    }
}

void basp_guard::vouch(const std::string& node_key) {
  auto& g = *impl_;
  if (node_key.empty())
    return;
  {
    std::lock_guard<std::mutex> guard{g.mtx};
    if (g.vouched.size() < g.opts.max_pending * 64)
      g.vouched.insert(node_key);
  }
  admit(node_key);
}

basp_guard::basp_guard(const endpoint& front, std::uint16_t back,
                       guard_options opts)
    : impl_(std::make_unique<impl>()) {
  impl_->back = back;
  impl_->opts = opts;
  impl_->refusals.set_rate(opts.log_lines_per_second);
  if (opts.tls.enabled())
    impl_->front = std::make_unique<tls_front>(opts.tls);
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
    for (auto& s : g.live)
      for (int fd : {s->client, s->server, s->tls})
        if (fd >= 0)
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
