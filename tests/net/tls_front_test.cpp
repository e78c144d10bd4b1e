// The port guard terminating TLS (net/tls_front.hpp) in front of a real CAF
// port: every refused handshake is logged within seconds, naming the peer
// and the reason in words (a certificate from another CA, none at all,
// plaintext BASP, a node that refuses ours, a plaintext node checking the
// port, silence), counted, and the node's own probe still says why on its
// side. Certificates from tests/net/make_certs.sh (cert_fixture.hpp).

#include <chrono>
#include <memory>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <catch2/catch.hpp>

#include "net/guard.hpp"
#include "net/tls_probe.hpp"
#include "tls_peer.hpp"

using namespace troupe::net;
using namespace troupe::test;

namespace {

bool have_openssl() {
  if (cert("ca.pem").empty()) {
    WARN("openssl command line tool not found: TLS tests skipped");
    return false;
  }
  return true;
}

struct plain_config : caf::actor_system_config {
  plain_config() {
    load<caf::io::middleman>();
  }
};

/// A coordinator's port as run_distributed opens it with TLS: CAF in
/// plaintext on 127.0.0.1, the guard terminating TLS in front.
struct tls_port {
  plain_config cfg;
  caf::actor_system sys{cfg};
  caf::actor echo;
  std::unique_ptr<basp_guard> guard;
  explicit tls_port(guard_options opts = {}) {
    echo = sys.spawn(
        []() -> caf::behavior { return {[](int x) { return x + 1; }}; });
    auto inner = sys.middleman().publish(echo, 0, "127.0.0.1");
    REQUIRE(inner);
    opts.registrar_id = echo.id();
    opts.tls = good_tls();
    opts.log_lines_per_second = 100;
    guard
        = std::make_unique<basp_guard>(endpoint{"127.0.0.1", 0}, *inner, opts);
  }
  ~tls_port() {
    guard.reset();
    caf::anon_send_exit(echo, caf::exit_reason::kill);
  }
  std::uint16_t port() const {
    return guard->port();
  }
  const guard_counters& counters() const {
    return guard->counters();
  }
};

/// How each refusal line starts.
const std::string refused_tls
    = "guard: refused the TLS handshake of 127.0.0.1:";
/// How the line starts when the peer gave up.
const std::string failed_tls = "guard: the TLS handshake of 127.0.0.1:";

} // namespace

TEST_CASE("a node with a valid certificate passes the TLS front") {
  if (!have_openssl())
    return;
  stderr_capture log;
  tls_port p;
  validate_tls(good_tls());
  auto r = probe_coordinator({"127.0.0.1", p.port()}, good_tls());
  INFO(r.message);
  CHECK(r.verdict == probe_result::go);
  CHECK(r.message.empty());
  CHECK(p.counters().tls_failed == 0);
  CHECK(p.counters().refused == 0);
  CHECK(log.line({"guard:"}).empty());
}

TEST_CASE("the coordinator logs a certificate from another CA") {
  if (!have_openssl())
    return;
  stderr_capture log;
  tls_port p;
  auto r = probe_coordinator({"127.0.0.1", p.port()}, foreign_tls());
  CHECK(r.verdict == probe_result::refused);
  CHECK_THAT(r.message, Catch::Contains("refused our TLS handshake"));
  auto line = log.wait_for({refused_tls,
                            "its certificate does not verify against "
                            "the CA file",
                            "ca.pem' (", ")"});
  INFO(log.text());
  CHECK_FALSE(line.empty());
  CHECK(p.counters().refused == 1);
  CHECK(p.counters().tls_failed == 1);
}

TEST_CASE("the coordinator logs a TLS client without a certificate") {
  if (!have_openssl())
    return;
  stderr_capture log;
  tls_port p;
  tls_options no_cert;
  no_cert.ca = cert("ca.pem"); // it trusts us, but has nothing to show
  tls_peer c{p.port(), no_cert};
  CHECK(c.closed_within(3));
  auto line = log.wait_for({refused_tls, ": the peer sent no certificate"});
  INFO(log.text());
  CHECK_FALSE(line.empty());
  CHECK(p.counters().refused == 1);
}

TEST_CASE("the coordinator logs a plaintext BASP client at its TLS port") {
  if (!have_openssl())
    return;
  stderr_capture log;
  tls_port p;
  int fd = tcp_connect(p.port());
  REQUIRE(fd >= 0);
  auto h = basp_handshake_header(32);
  h.resize(64, 'K');
  REQUIRE(::send(fd, h.data(), h.size(), MSG_NOSIGNAL) == 64);
  unsigned char b[64];
  auto t0 = std::chrono::steady_clock::now();
  CHECK(::recv(fd, b, sizeof(b), 0) <= 0); // closed, nothing sent back
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds{3});
  ::close(fd);
  auto line = log.wait_for({refused_tls, "it speaks plaintext BASP, not TLS"});
  INFO(log.text());
  CHECK_FALSE(line.empty());
  CHECK(p.counters().refused == 1);
  CHECK(p.counters().tls_failed == 1);
}

TEST_CASE("the coordinator logs a node that refuses its certificate and a "
          "plaintext node checking the port") {
  if (!have_openssl())
    return;
  stderr_capture log;
  tls_port p;
  auto r = probe_coordinator({"127.0.0.1", p.port()}, wrong_ca_tls());
  CHECK(r.verdict == probe_result::refused);
  CHECK_THAT(r.message, Catch::Contains("refused the TLS certificate"));
  auto line = log.wait_for({failed_tls,
                            "it aborted the handshake with the "
                            "alert 'unknown CA'",
                            "node.pem"});
  INFO(log.text());
  CHECK_FALSE(line.empty());
  r = probe_coordinator({"127.0.0.1", p.port()}, tls_options{});
  CHECK(r.verdict == probe_result::refused);
  CHECK_THAT(r.message, Catch::Contains("speaks TLS: start this node with"));
  line = log.wait_for({failed_tls, "it closed the connection during the TLS "
                                   "handshake, without sending a "
                                   "certificate"});
  CHECK_FALSE(line.empty());
  // Neither was our refusal: counted as failed handshakes only.
  CHECK(p.counters().tls_failed == 2);
  CHECK(p.counters().refused == 0);
}

TEST_CASE("a silent or slow TLS handshake is cut at the handshake deadline "
          "and counts as pending") {
  if (!have_openssl())
    return;
  stderr_capture log;
  guard_options o;
  o.handshake_timeout = 1;
  o.max_pending_per_address = 2;
  tls_port p{o};
  int silent = tcp_connect(p.port());
  int slow = tcp_connect(p.port());
  REQUIRE(silent >= 0);
  REQUIRE(slow >= 0);
  unsigned char hello_start[3] = {0x16, 0x03, 0x01}; // and no more
  REQUIRE(::send(slow, hello_start, 3, MSG_NOSIGNAL) == 3);
  // Both hold the two slots of 127.0.0.1: a third is refused at accept.
  int third = tcp_connect(p.port());
  unsigned char b[16];
  CHECK(::recv(third, b, sizeof(b), 0) == 0);
  auto t0 = std::chrono::steady_clock::now();
  CHECK(::recv(silent, b, sizeof(b), 0) <= 0);
  CHECK(::recv(slow, b, sizeof(b), 0) <= 0);
  auto took
      = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
  CHECK(took < 2.5);
  CHECK_FALSE(log.wait_for({"sent no complete TLS handshake within 1 s of "
                            "connecting: it sent nothing"})
                  .empty());
  CHECK_FALSE(log.wait_for({"sent no complete TLS handshake within 1 s of "
                            "connecting: the TLS handshake did not complete"})
                  .empty());
  CHECK_FALSE(log.wait_for({"per-address limit"}).empty());
  CHECK(p.counters().timed_out == 2);
  CHECK(p.counters().refused == 1);
  for (int fd : {silent, slow, third})
    ::close(fd);
}
