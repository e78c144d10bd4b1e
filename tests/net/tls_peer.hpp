// Test helpers for the guard's TLS front (tls_front_test.cpp,
// tls_front_caf_test.cpp): a raw OpenSSL client that can present any
// certificate (or none) and send any bytes, and a capture of the log (stderr)
// the guard writes.

#pragma once

#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "cert_fixture.hpp"
#include "net/tls.hpp"

namespace troupe::test {

using bytes = std::vector<unsigned char>;

/// A file of the certificate fixture ("" without openssl).
inline std::string cert(const std::string& name) {
  const auto& dir = cert_dir();
  return dir.empty() ? std::string{} : dir + "/" + name;
}

inline net::tls_options good_tls() {
  return {cert("node.pem"), cert("node.key"), cert("ca.pem")};
}

/// A node certificate from another CA, trusting both CAs: it accepts the
/// coordinator's certificate, the coordinator refuses its own.
inline net::tls_options foreign_tls() {
  return {cert("wrong.pem"), cert("wrong.key"), cert("both-ca.pem")};
}

/// A node of another CA that trusts only that CA: it refuses the
/// coordinator's certificate.
inline net::tls_options wrong_ca_tls() {
  return {cert("wrong.pem"), cert("wrong.key"), cert("wrong-ca.pem")};
}

/// A plain TCP connection to 127.0.0.1:port (-1 on failure).
inline int tcp_connect(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  return fd;
}

/// A BASP 0.17 client handshake header announcing `len` payload bytes.
inline bytes basp_handshake_header(std::uint32_t len) {
  bytes h(32, 0);
  h[0] = 1;
  h[15] = 3; // operation_data, as BASP 0.17 peers send
  for (int i = 0; i < 4; ++i)
    h[4 + i] = static_cast<unsigned char>(len >> (24 - 8 * i));
  return h;
}

/// A TLS client made with OpenSSL directly, blocking with 5 s timeouts.
struct tls_peer {
  SSL_CTX* ctx = nullptr;
  SSL* ssl = nullptr;
  int fd = -1;
  bool connected = false;

  /// Connects and runs the handshake with `o`'s files; without a
  /// certificate when o.cert is empty (then trusting o.ca, if set).
  tls_peer(std::uint16_t port, const net::tls_options& o) {
    std::signal(SIGPIPE, SIG_IGN);
    ctx = SSL_CTX_new(TLS_client_method());
    if (!o.cert.empty()) {
      SSL_CTX_use_certificate_chain_file(ctx, o.cert.c_str());
      SSL_CTX_use_PrivateKey_file(ctx, o.key.c_str(), SSL_FILETYPE_PEM);
    }
    if (!o.ca.empty())
      SSL_CTX_load_verify_locations(ctx, o.ca.c_str(), nullptr);
    fd = tcp_connect(port);
    ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    connected = fd >= 0 && SSL_connect(ssl) == 1;
    ERR_clear_error();
  }
  ~tls_peer() {
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    if (fd >= 0)
      ::close(fd);
  }
  tls_peer(const tls_peer&) = delete;
  tls_peer& operator=(const tls_peer&) = delete;

  bool send(const bytes& b) {
    return SSL_write(ssl, b.data(), static_cast<int>(b.size()))
           == static_cast<int>(b.size());
  }

  /// True if the connection ends (EOF, alert or error) within `seconds`;
  /// bytes the guard relays meanwhile are read and dropped.
  bool closed_within(double seconds) {
    auto end = std::chrono::steady_clock::now()
               + std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::duration<double>(seconds));
    unsigned char buf[4096];
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{fd, POLLIN, 0};
      if (SSL_pending(ssl) == 0 && ::poll(&p, 1, 20) != 1)
        continue;
      if (SSL_read(ssl, buf, sizeof(buf)) <= 0) {
        ERR_clear_error();
        return true;
      }
    }
    return false;
  }
};

/// What this process writes to stderr (the log) while it exists, kept in a
/// temp file; given back to the real stderr at the end.
struct stderr_capture {
  int saved = -1;
  std::string path;
  stderr_capture() {
    char templ[] = "/tmp/troupe-stderr-XXXXXX";
    int fd = ::mkstemp(templ);
    path = templ;
    std::fflush(stderr);
    saved = ::dup(2);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~stderr_capture() {
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    auto all = text();
    std::fwrite(all.data(), 1, all.size(), stderr);
    ::unlink(path.c_str());
  }
  stderr_capture(const stderr_capture&) = delete;
  stderr_capture& operator=(const stderr_capture&) = delete;

  std::string text() const {
    std::ifstream in{path};
    return {std::istreambuf_iterator<char>{in}, {}};
  }

  /// The first line holding every one of `parts` ("" if none).
  std::string line(std::initializer_list<std::string> parts) const {
    std::istringstream in{text()};
    for (std::string l; std::getline(in, l);) {
      bool all = true;
      for (auto& p : parts)
        all = all && l.find(p) != std::string::npos;
      if (all)
        return l;
    }
    return {};
  }

  /// Waits up to `seconds` for such a line; returns it ("" if none came).
  std::string wait_for(std::initializer_list<std::string> parts,
                       double seconds = 3) const {
    auto end = std::chrono::steady_clock::now()
               + std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::duration<double>(seconds));
    for (;;) {
      auto l = line(parts);
      if (!l.empty() || std::chrono::steady_clock::now() >= end)
        return l;
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
    }
  }
};

} // namespace troupe::test
