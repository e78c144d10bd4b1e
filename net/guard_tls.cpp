#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/socket.h>
#include <unistd.h>

#include "net/guard_session.hpp"

// The guard's TLS termination for one connection: the handshake (its
// refusals logged and counted), then a socketpair whose one end the relay
// reads as the peer's stream and whose other end a pump thread bridges to the
// TLS connection (tls_front.hpp).

namespace troupe::net {

std::thread basp_guard::impl::open_tls(guard_session& s) {
  auto deadline = s.accepted
                  + std::chrono::duration_cast<clock::duration>(
                      std::chrono::duration<double>(opts.handshake_timeout));
  auto r = front->accept(s.tls, deadline);
  if (!r.conn) {
    if (r.why.empty())
      return {}; // closed before sending a byte: a port check
    ++counters.tls_failed;
    if (r.timed_out) {
      ++counters.timed_out;
      note(s.peer + " sent no complete TLS handshake within "
           + seconds_text(opts.handshake_timeout) + " of connecting: " + r.why);
    } else if (r.refused) {
      ++counters.refused;
      note("refused the TLS handshake of " + s.peer + ": " + r.why);
    } else {
      note("the TLS handshake of " + s.peer + " failed: " + r.why);
    }
    return {};
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    note("cannot relay " + s.peer + ": socketpair: " + std::strerror(errno));
    return {};
  }
  {
    std::lock_guard<std::mutex> guard{mtx};
    s.client = pair[1];
    if (stopping)
      ::shutdown(pair[1], SHUT_RDWR);
  }
  std::shared_ptr<tls_connection> conn = std::move(r.conn);
  return std::thread{[this, conn, plain = pair[0], peer = s.peer] {
    auto why = conn->pump(plain);
    ::close(plain);
    if (!why.empty())
      note("the TLS connection of " + peer + " failed: " + why);
  }};
}

} // namespace troupe::net
