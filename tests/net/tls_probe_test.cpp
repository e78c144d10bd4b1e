// A node facing a coordinator it cannot talk to says why within seconds:
// probe_coordinator and run_node against TLS and plaintext listeners, with
// a wrong CA, a certificate the listener's CA did not sign, TLS against
// plaintext and the reverse. Certificates from tests/net/make_certs.sh.

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>
#include <catch2/catch.hpp>

#include "cert_fixture.hpp"
#include "net/node.hpp"
#include "net/tls.hpp"
#include "net/tls_probe.hpp"

using namespace troupe::net;

namespace {

std::string file(const std::string& name) {
  const auto& dir = troupe::test::cert_dir();
  return dir.empty() ? std::string{} : dir + "/" + name;
}

bool have_openssl() {
  if (file("ca.pem").empty()) {
    WARN("openssl command line tool not found: TLS tests skipped");
    return false;
  }
  return true;
}

tls_options good() {
  return {file("node.pem"), file("node.key"), file("ca.pem")};
}
tls_options wrong_ca() {
  return {file("wrong.pem"), file("wrong.key"), file("wrong-ca.pem")};
}
tls_options foreign_cert() {
  return {file("wrong.pem"), file("wrong.key"), file("both-ca.pem")};
}

/// An actor system publishing an echo actor on 127.0.0.1, over TLS when
/// `tls` is enabled: a stand-in for a coordinator's port.
struct listener {
  std::unique_ptr<caf::actor_system_config> cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::actor echo;
  std::uint16_t port = 0;
  explicit listener(const tls_options& tls) {
    cfg = std::make_unique<caf::actor_system_config>();
    cfg->load<caf::io::middleman>();
    apply_tls(*cfg, tls);
    sys = std::make_unique<caf::actor_system>(*cfg);
    echo = sys->spawn(
        []() -> caf::behavior { return {[](int x) { return x; }}; });
    auto p = tls.enabled() ? caf::openssl::publish(echo, 0, "127.0.0.1")
                           : sys->middleman().publish(echo, 0, "127.0.0.1");
    REQUIRE(p);
    port = *p;
  }
  ~listener() {
    caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
  }
  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;
  endpoint where() const {
    return {"127.0.0.1", port};
  }
};

/// probe_coordinator's answer, checked to come within a few seconds.
probe_result probe(const listener& l, const tls_options& tls) {
  validate_tls(tls);
  auto start = std::chrono::steady_clock::now();
  auto r = probe_coordinator(l.where(), tls);
  auto s
      = std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  INFO("probe took " << s << " s: " << r.message);
  CHECK(s < 6);
  return r;
}

/// run_node against `l` with a 60 s join timeout: it must give up at once
/// with status 1 and a message holding every part.
void node_gives_up(const listener& l, const tls_options& tls,
                   std::initializer_list<std::string> parts) {
  node_options opts;
  opts.join = l.where();
  opts.join_timeout = 60;
  opts.link.tls = tls;
  opts.threads = 2;
  auto start = std::chrono::steady_clock::now();
  auto out = run_node(opts, {});
  auto s
      = std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  INFO("run_node took " << s << " s: " << out.message);
  CHECK(out.status == 1);
  CHECK(s < 10); // well under the 60 s join timeout
  for (auto& p : parts)
    CHECK_THAT(out.message, Catch::Contains(p));
}

} // namespace

TEST_CASE("probe: matching ends go ahead") {
  if (!have_openssl())
    return;
  listener tls{good()};
  auto r = probe(tls, good());
  CHECK(r.verdict == probe_result::go);
  CHECK(r.message.empty());
  listener plain{tls_options{}};
  r = probe(plain, tls_options{});
  CHECK(r.verdict == probe_result::go);
  CHECK(r.message.empty());
}

TEST_CASE("probe: nobody listening means retry") {
  // A port that was just free: bind, read it, close.
  std::uint16_t port = 0;
  {
    listener l{tls_options{}};
    port = l.port;
  }
  auto r = probe_coordinator({"127.0.0.1", port}, tls_options{}, 2);
  CHECK(r.verdict == probe_result::retry);
  CHECK_THAT(r.message, Catch::Contains("cannot connect"));
}

TEST_CASE("a node with the wrong CA says so at once") {
  if (!have_openssl())
    return;
  listener tls{good()};
  auto r = probe(tls, wrong_ca());
  CHECK(r.verdict == probe_result::refused);
  CHECK_THAT(r.message, Catch::Contains("refused the TLS certificate")
                            && Catch::Contains("wrong-ca.pem"));
  node_gives_up(tls, wrong_ca(), {"wrong-ca.pem", "same CA"});
}

TEST_CASE("a node whose certificate the coordinator refuses says so") {
  if (!have_openssl())
    return;
  listener tls{good()};
  auto r = probe(tls, foreign_cert());
  CHECK(r.verdict == probe_result::refused);
  CHECK_THAT(r.message, Catch::Contains("refused our TLS handshake: ")
                            && Catch::Contains("alert")
                            && Catch::Contains("wrong.pem"));
  node_gives_up(tls, foreign_cert(), {"refused our TLS handshake: "});
}

TEST_CASE("a plaintext node against a TLS coordinator says so") {
  if (!have_openssl())
    return;
  listener tls{good()};
  auto r = probe(tls, tls_options{});
  CHECK(r.verdict == probe_result::refused);
  CHECK_THAT(r.message, Catch::Contains("speaks TLS: start this node with "
                                        "--tls-cert/--tls-key/--tls-ca"));
  node_gives_up(tls, tls_options{}, {"speaks TLS"});
}

TEST_CASE("a TLS node against a plaintext coordinator says so") {
  if (!have_openssl())
    return;
  listener plain{tls_options{}};
  auto r = probe(plain, good());
  CHECK(r.verdict == probe_result::refused);
  CHECK_THAT(r.message, Catch::Contains("this node speaks TLS but the "
                                        "coordinator at 127.0.0.1:"));
  node_gives_up(plain, good(), {"this node speaks TLS but"});
}
