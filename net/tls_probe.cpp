#include "net/tls_probe.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/detail/openssl.hpp"

namespace troupe::net {

namespace {

using clock = std::chrono::steady_clock;
using detail::left_ms;
using detail::ssl_reasons;
using ctx_ptr = detail::ssl_ctx_ptr;
using detail::ssl_ptr;

/// A socket closed on scope exit.
struct socket_fd {
  int fd = -1;
  ~socket_fd() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// Connects to `where` before `deadline`; "" on success, else the reason.
std::string connect_to(socket_fd& s, const endpoint& where,
                       clock::time_point deadline) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = ::getaddrinfo(where.host.c_str(),
                             std::to_string(where.port).c_str(), &hints, &res);
      rc != 0)
    return ::gai_strerror(rc);
  std::string why = "no address";
  for (auto* a = res; a != nullptr; a = a->ai_next) {
    socket_fd c;
    c.fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    0);
    if (c.fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    if (::connect(c.fd, a->ai_addr, a->ai_addrlen) != 0
        && errno != EINPROGRESS) {
      why = std::strerror(errno);
      continue;
    }
    pollfd p{c.fd, POLLOUT, 0};
    if (::poll(&p, 1, left_ms(deadline)) != 1) {
      why = "connection timed out";
      continue;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      why = std::strerror(err);
      continue;
    }
    s.fd = c.fd;
    c.fd = -1;
    why.clear();
    break;
  }
  ::freeaddrinfo(res);
  if (why.empty()) { // blocking from here on, bounded by timeouts
    ::fcntl(s.fd, F_SETFL, ::fcntl(s.fd, F_GETFL) & ~O_NONBLOCK);
  }
  return why;
}

/// Waits up to `ms` for bytes from the peer and peeks at up to 3 of them:
/// -1 on EOF or error, else how many (0: the peer stayed silent).
int peek(int fd, unsigned char* buf, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) != 1)
    return 0;
  auto got = ::recv(fd, buf, 3, MSG_PEEK | MSG_DONTWAIT);
  return got > 0 ? static_cast<int>(got) : -1;
}

/// True if the bytes start a TLS record (an alert or a handshake, version
/// 3.x); a BASP header starts with its operation, 0 to 6.
bool is_tls_record(const unsigned char* b, int n) {
  return n >= 2 && (b[0] == 0x15 || b[0] == 0x16) && b[1] == 0x03;
}

void set_timeouts(int fd, clock::time_point deadline) {
  auto ms = std::max(left_ms(deadline), 1);
  timeval tv{};
  tv.tv_sec = ms / 1000;
  tv.tv_usec = (ms % 1000) * 1000;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/// True for the reasons OpenSSL gives when the peer's bytes are not TLS.
bool not_tls_reason(const std::string& why) {
  for (const char* r :
       {"wrong version number", "packet length too long", "unknown protocol",
        "record layer failure", "http request"})
    if (why.find(r) != std::string::npos)
      return true;
  return false;
}

/// Whether a plaintext peer answers a ClientHello the way a TLS listener
/// would (with a TLS record).
bool answers_tls(int fd, clock::time_point deadline) {
  ctx_ptr ctx{SSL_CTX_new(TLS_client_method())};
  if (!ctx)
    return false;
  ssl_ptr ssl{SSL_new(ctx.get())};
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  if (!ssl || in == nullptr || out == nullptr) {
    BIO_free(in);
    BIO_free(out);
    return false;
  }
  SSL_set_bio(ssl.get(), in, out); // ssl owns both now
  SSL_set_connect_state(ssl.get());
  SSL_do_handshake(ssl.get()); // writes the ClientHello into `out`
  ERR_clear_error();
  char* hello = nullptr;
  auto n = BIO_get_mem_data(out, &hello);
  set_timeouts(fd, deadline);
  if (n <= 0
      || ::send(fd, hello, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n)
    return false;
  unsigned char reply[3] = {};
  return is_tls_record(reply, peek(fd, reply, left_ms(deadline)));
}

std::string where_text(const endpoint& where) {
  return where.host + ":" + std::to_string(where.port);
}

probe_result refused(std::string message) {
  return {probe_result::refused, std::move(message)};
}

/// The TLS handshake as caf::openssl runs it (TLS_method, certificate
/// chain, key, CA file, peer certificate required, HIGH:!aNULL:!MD5), then
/// one read: a TLS 1.3 server checks our certificate after SSL_connect
/// returned, and sends its BASP handshake once it accepted it.
probe_result tls_handshake(int fd, const endpoint& where,
                           const tls_options& tls, clock::time_point deadline) {
  auto at = "the coordinator at " + where_text(where);
  ERR_clear_error();
  ctx_ptr ctx{SSL_CTX_new(TLS_method())};
  if (!ctx
      || SSL_CTX_use_certificate_chain_file(ctx.get(), tls.cert.c_str()) != 1
      || SSL_CTX_use_PrivateKey_file(ctx.get(), tls.key.c_str(),
                                     SSL_FILETYPE_PEM)
             != 1
      || SSL_CTX_load_verify_locations(ctx.get(), tls.ca.c_str(), nullptr) != 1
      || SSL_CTX_set_cipher_list(ctx.get(), "HIGH:!aNULL:!MD5") != 1)
    return {probe_result::go, "cannot set up a TLS probe: " + ssl_reasons()};
  SSL_CTX_set_verify(
      ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  ssl_ptr ssl{SSL_new(ctx.get())};
  if (!ssl || SSL_set_fd(ssl.get(), fd) != 1)
    return {probe_result::go, "cannot set up a TLS probe: " + ssl_reasons()};
  set_timeouts(fd, deadline);
  auto rc = SSL_connect(ssl.get());
  if (rc == 1) {
    unsigned char byte = 0;
    rc = SSL_peek(ssl.get(), &byte, 1);
    if (rc > 0) {
      SSL_shutdown(ssl.get());
      return {};
    }
  }
  auto kind = SSL_get_error(ssl.get(), rc);
  auto verify = SSL_get_verify_result(ssl.get());
  auto why = ssl_reasons();
  if (verify != X509_V_OK)
    return refused(
        "this node refused the TLS certificate of " + at
        + ": it does not verify against this node's CA file '" + tls.ca + "' ("
        + X509_verify_cert_error_string(verify)
        + "); every process of a job needs a certificate from the same CA");
  if (kind == SSL_ERROR_SSL && not_tls_reason(why))
    return refused("this node speaks TLS but " + at
                   + " does not (it answered in plaintext): start both with "
                     "--tls-cert/--tls-key/--tls-ca or neither");
  if (kind == SSL_ERROR_SSL)
    return refused(at + " refused our TLS handshake: " + why
                   + " (is this node's certificate '" + tls.cert
                   + "' signed by the coordinator's CA?)");
  // EOF, a timeout or a reset: nothing certain; CAF may still get through.
  return {probe_result::go,
          "the TLS handshake with " + at + " did not complete ("
              + (why.empty() ? std::string{errno != 0 ? std::strerror(errno)
                                                      : "connection closed"}
                             : why)
              + ")"};
}

} // namespace

probe_result probe_coordinator(const endpoint& where, const tls_options& tls,
                               double seconds) {
  auto deadline
      = clock::now()
        + std::chrono::milliseconds{static_cast<std::int64_t>(seconds * 1000)};
  socket_fd s;
  if (auto why = connect_to(s, where, deadline); !why.empty())
    return {probe_result::retry,
            "cannot connect to " + where_text(where) + ": " + why};
  // A plaintext coordinator (or its guard) sends its BASP handshake at once;
  // a TLS one waits for our ClientHello.
  unsigned char first[3] = {};
  int n = peek(s.fd, first, tls.enabled() ? 300 : 1000);
  if (n < 0)
    return {probe_result::go, "the coordinator at " + where_text(where)
                                  + " closed the connection at once"};
  if (tls.enabled()) {
    if (n > 0 && !is_tls_record(first, n))
      return refused("this node speaks TLS but the coordinator at "
                     + where_text(where)
                     + " does not (it answered in plaintext BASP): start "
                       "both with --tls-cert/--tls-key/--tls-ca or neither");
    return tls_handshake(s.fd, where, tls, deadline);
  }
  if (n > 0)
    return {};
  if (answers_tls(s.fd, deadline))
    return refused("the coordinator at " + where_text(where)
                   + " speaks TLS: start this node with "
                     "--tls-cert/--tls-key/--tls-ca (a certificate from the "
                     "coordinator's CA)");
  return {};
}

} // namespace troupe::net
