#include "net/tls_front.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include "net/detail/openssl.hpp"
#include "optim/quote.hpp"

// The handshake runs on a non-blocking socket, waiting with poll(2) until the
// deadline; the pump moves bytes both ways from one thread, so the SSL object
// never sees two threads.

namespace troupe::net {

namespace {

using clock = std::chrono::steady_clock;
using detail::left_ms;
using detail::ssl_errors;
using detail::ssl_reasons;

void set_nonblocking(int fd) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/// Whether `codes` hold OpenSSL's `reason` (from libssl).
bool has_reason(const std::vector<unsigned long>& codes, int reason) {
  return std::any_of(codes.begin(), codes.end(), [&](unsigned long c) {
    return ERR_GET_LIB(c) == ERR_LIB_SSL && ERR_GET_REASON(c) == reason;
  });
}

/// The first alert the peer sent, from `codes` (-1: none).
int received_alert(const std::vector<unsigned long>& codes) {
  for (auto c : codes)
    if (ERR_GET_LIB(c) == ERR_LIB_SSL
        && ERR_GET_REASON(c) >= SSL_AD_REASON_OFFSET)
      return ERR_GET_REASON(c) - SSL_AD_REASON_OFFSET;
  return -1;
}

/// True for alerts a TLS client sends when it does not trust our certificate.
bool is_certificate_alert(int alert) {
  switch (alert) {
  case SSL_AD_BAD_CERTIFICATE:
  case SSL_AD_UNSUPPORTED_CERTIFICATE:
  case SSL_AD_CERTIFICATE_REVOKED:
  case SSL_AD_CERTIFICATE_EXPIRED:
  case SSL_AD_CERTIFICATE_UNKNOWN:
  case SSL_AD_UNKNOWN_CA:
  case SSL_AD_DECRYPT_ERROR:
    return true;
  default:
    return false;
  }
}

/// Why bytes that do not start a TLS handshake record are not TLS.
std::string not_tls(const unsigned char* b, std::size_t n) {
  // A BASP 0.17 header starts with its operation, 0 to 6.
  if (b[0] <= 6)
    return "it speaks plaintext BASP, not TLS (start the node with "
           "--tls-cert, --tls-key and --tls-ca)";
  std::string head(reinterpret_cast<const char*>(b),
                   std::min<std::size_t>(n, 4));
  for (const char* verb : {"GET ", "POST", "HEAD", "PUT ", "PRI "})
    if (head == verb)
      return "it speaks HTTP, not TLS";
  char hex[8];
  std::snprintf(hex, sizeof(hex), "0x%02x", b[0]);
  return std::string{"it does not speak TLS (its first byte is "} + hex
         + ", a TLS handshake starts with 0x16)";
}

/// Shuts `fd` down for writing (the alert is out) and reads what the peer
/// still sends for a moment, so that closing it does not reset the
/// connection before the peer read the alert.
void linger(int fd, clock::time_point deadline) {
  ::shutdown(fd, SHUT_WR);
  deadline = std::min(deadline, clock::now() + std::chrono::seconds{1});
  unsigned char sink[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left_ms(deadline)) != 1)
      return;
    auto got = ::recv(fd, sink, sizeof(sink), 0);
    if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN))
      return;
  }
}

} // namespace

struct tls_front::impl {
  detail::ssl_ctx_ptr ctx;
  tls_options files;

  /// The words for a failed SSL_accept (OpenSSL's queue is then cleared).
  tls_accept_result failure(SSL* ssl, int rc) const;
};

struct tls_connection::impl {
  detail::ssl_ptr ssl;
  int fd = -1;
};

tls_front::tls_front(const tls_options& o) : impl_(std::make_unique<impl>()) {
  impl_->files = o;
  ERR_clear_error();
  auto fail = [&](const std::string& what) {
    throw std::runtime_error("TLS: cannot " + what + ": " + ssl_reasons());
  };
  impl_->ctx.reset(SSL_CTX_new(TLS_method()));
  auto* ctx = impl_->ctx.get();
  if (ctx == nullptr)
    fail("create an OpenSSL context");
  if (SSL_CTX_use_certificate_chain_file(ctx, o.cert.c_str()) != 1)
    fail("load the certificate file " + optim::quote(o.cert, 256));
  if (SSL_CTX_use_PrivateKey_file(ctx, o.key.c_str(), SSL_FILETYPE_PEM) != 1)
    fail("load the private key file " + optim::quote(o.key, 256));
  if (SSL_CTX_load_verify_locations(ctx, o.ca.c_str(), nullptr) != 1)
    fail("load the CA file " + optim::quote(o.ca, 256));
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                     nullptr);
  if (SSL_CTX_set_cipher_list(ctx, "HIGH:!aNULL:!MD5") != 1)
    fail("set the cipher list");
  // The pump retries a write with a buffer that may have moved, and takes
  // every record written as progress.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE
                            | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

tls_front::~tls_front() = default;

tls_accept_result tls_front::impl::failure(SSL* ssl, int rc) const {
  tls_accept_result r;
  auto kind = SSL_get_error(ssl, rc);
  auto verify = SSL_get_verify_result(ssl);
  auto codes = ssl_errors();
  auto alert = received_alert(codes);
  bool our_flight_out = BIO_number_written(SSL_get_wbio(ssl)) > 0;
  r.refused = true;
  if (verify != X509_V_OK) {
    r.why = "its certificate does not verify against the CA file "
            + optim::quote(files.ca, 256) + " ("
            + X509_verify_cert_error_string(verify) + ")";
  } else if (has_reason(codes, SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE)) {
    r.why = "the peer sent no certificate";
  } else if (alert >= 0) {
    r.refused = false; // the peer refused us
    r.why = std::string{"it aborted the handshake with the alert '"}
            + SSL_alert_desc_string_long(alert) + "'";
    if (is_certificate_alert(alert))
      r.why += ": it does not accept this coordinator's certificate "
               + optim::quote(files.cert, 256)
               + " (is its CA file the one that signed it?)";
  } else if (kind == SSL_ERROR_SSL
             && !has_reason(codes, SSL_R_UNEXPECTED_EOF_WHILE_READING)) {
    r.why = "OpenSSL: " + ssl_reasons(codes);
  } else {
    r.refused = false;
    r.why = our_flight_out
                ? "it closed the connection during the TLS handshake, "
                  "without sending a certificate (a node without "
                  "--tls-cert, --tls-key and --tls-ca does this when it "
                  "checks the port)"
                : "it closed the connection during the TLS handshake";
  }
  return r;
}

tls_accept_result tls_front::accept(int fd, clock::time_point deadline) const {
  set_nonblocking(fd);
  tls_accept_result r;
  // The first bytes decide whether OpenSSL gets to see them.
  unsigned char first[8] = {};
  ssize_t got = 0;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, left_ms(deadline));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready == 0) {
      r.timed_out = true;
      r.why = "it sent nothing (a plaintext BASP client waits silently for "
              "the server to speak first)";
      return r;
    }
    got = ::recv(fd, first, sizeof(first), MSG_PEEK);
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    break;
  }
  if (got <= 0)
    return r; // closed before a byte: nothing to say
  if (first[0] != 0x16) {
    r.refused = true;
    r.why = not_tls(first, static_cast<std::size_t>(got));
    linger(fd, deadline);
    return r;
  }
  detail::ssl_ptr ssl{SSL_new(impl_->ctx.get())};
  ERR_clear_error();
  if (!ssl || SSL_set_fd(ssl.get(), fd) != 1) {
    r.why = "cannot set up a TLS connection: " + ssl_reasons();
    return r;
  }
  SSL_set_accept_state(ssl.get());
  for (;;) {
    auto rc = SSL_accept(ssl.get());
    if (rc == 1)
      break;
    auto kind = SSL_get_error(ssl.get(), rc);
    short want = kind == SSL_ERROR_WANT_READ    ? POLLIN
                 : kind == SSL_ERROR_WANT_WRITE ? POLLOUT
                                                : 0;
    if (want == 0) {
      r = impl_->failure(ssl.get(), rc);
      if (r.refused)
        linger(fd, deadline);
      return r;
    }
    pollfd p{fd, want, 0};
    int ready = ::poll(&p, 1, left_ms(deadline));
    if (ready == 0) {
      r.timed_out = true;
      r.why = "the TLS handshake did not complete";
      ERR_clear_error();
      return r;
    }
  }
  auto c = std::make_unique<tls_connection::impl>();
  c->ssl = std::move(ssl);
  c->fd = fd;
  r.conn = std::make_unique<tls_connection>(std::move(c));
  return r;
}

tls_connection::tls_connection(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

tls_connection::~tls_connection() = default;

std::string tls_connection::pump(int plain) {
  SSL* ssl = impl_->ssl.get();
  int fd = impl_->fd;
  set_nonblocking(plain);
  constexpr std::size_t cap = 256 << 10;
  std::vector<unsigned char> in(cap), out(cap); // in: from the peer
  std::size_t in_lo = 0, in_hi = 0, out_lo = 0, out_hi = 0;
  int retry_write = 0; // length of a write OpenSSL wants repeated
  bool peer_done = false, plain_done = false, plain_shut = false;
  std::string why;
  auto finish = [&](bool notify) {
    if (notify)
      SSL_shutdown(ssl); // close_notify, if the socket takes it
    ERR_clear_error();
    return why;
  };
  auto tls_error = [&](int rc) {
    auto kind = SSL_get_error(ssl, rc);
    auto codes = ssl_errors();
    if (kind == SSL_ERROR_SSL
        && !has_reason(codes, SSL_R_UNEXPECTED_EOF_WHILE_READING))
      why = ssl_reasons(codes);
    return kind;
  };
  for (;;) {
    short tls_wait = 0, plain_wait = 0;
    for (bool moved = true; moved;) {
      moved = false;
      tls_wait = plain_wait = 0;
      // peer -> in: every record that has arrived (one send for them all)
      while (!peer_done && in_hi < cap) {
        int n = SSL_read(ssl, in.data() + in_hi, static_cast<int>(cap - in_hi));
        if (n > 0) {
          in_hi += static_cast<std::size_t>(n);
          moved = true;
          continue;
        }
        auto kind = tls_error(n);
        if (kind == SSL_ERROR_WANT_READ)
          tls_wait |= POLLIN;
        else if (kind == SSL_ERROR_WANT_WRITE)
          tls_wait |= POLLOUT;
        else
          peer_done = moved = true;
        break;
      }
      if (in_lo < in_hi) { // in -> plain
        auto n = ::send(plain, in.data() + in_lo, in_hi - in_lo, MSG_NOSIGNAL);
        if (n > 0) {
          in_lo += static_cast<std::size_t>(n);
          if (in_lo == in_hi)
            in_lo = in_hi = 0;
          moved = true;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
          plain_wait |= POLLOUT;
        } else if (!(n < 0 && errno == EINTR)) {
          return finish(true); // the relay is gone
        }
      } else if (peer_done && !plain_shut) {
        ::shutdown(plain, SHUT_WR);
        plain_shut = true;
      }
      if (!plain_done && out_hi < cap) { // plain -> out
        auto n = ::recv(plain, out.data() + out_hi, cap - out_hi, 0);
        if (n > 0) {
          out_hi += static_cast<std::size_t>(n);
          moved = true;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
          plain_wait |= POLLIN;
        } else if (!(n < 0 && errno == EINTR)) {
          plain_done = moved = true;
        }
      }
      if (out_lo < out_hi) { // out -> peer
        int len = retry_write > 0 ? retry_write
                                  : static_cast<int>(std::min<std::size_t>(
                                      out_hi - out_lo, 1 << 30));
        int n = SSL_write(ssl, out.data() + out_lo, len);
        if (n > 0) {
          retry_write = 0;
          out_lo += static_cast<std::size_t>(n);
          if (out_lo == out_hi)
            out_lo = out_hi = 0;
          moved = true;
        } else {
          auto kind = tls_error(n);
          if (kind != SSL_ERROR_WANT_READ && kind != SSL_ERROR_WANT_WRITE)
            return finish(false); // the peer is gone
          retry_write = len;
          tls_wait |= kind == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        }
      } else if (plain_done) {
        return finish(true);
      }
    }
    // A socket with nothing to wait for is left out: its hang-up would wake
    // the poll at once, again and again.
    pollfd p[2] = {{tls_wait != 0 ? fd : -1, tls_wait, 0},
                   {plain_wait != 0 ? plain : -1, plain_wait, 0}};
    if (::poll(p, 2, 1000) < 0 && errno != EINTR)
      return finish(false);
    // A hang-up or error on either socket shows in the next attempts.
  }
}

} // namespace troupe::net
