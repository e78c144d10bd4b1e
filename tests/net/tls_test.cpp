// validate_tls accepts a good certificate set and rejects each bad one with a
// message naming the file and the problem; apply_tls gives caf::openssl a
// working configuration (a TLS round trip between two actor systems).
// The certificates come from tests/net/make_certs.sh, run into a temp dir.

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>
#include <catch2/catch.hpp>

#include "cert_fixture.hpp"
#include "net/tls.hpp"

using troupe::net::apply_tls;
using troupe::net::tls_options;
using troupe::net::validate_tls;

namespace {

using troupe::test::cert_dir;

std::string file(const std::string& name) {
  return cert_dir() + "/" + name;
}

tls_options good() {
  return {file("node.pem"), file("node.key"), file("ca.pem")};
}

/// validate_tls(o) throws std::invalid_argument whose message holds all of
/// `parts`.
void rejects(const tls_options& o, std::initializer_list<std::string> parts) {
  try {
    validate_tls(o);
    FAIL("accepted: cert=" << o.cert << " key=" << o.key << " ca=" << o.ca);
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    INFO(msg);
    for (auto& p : parts)
      CHECK_THAT(msg, Catch::Contains(p));
  }
}

bool have_openssl() {
  if (cert_dir().empty()) {
    WARN("openssl command line tool not found: TLS tests skipped");
    return false;
  }
  return true;
}

} // namespace

TEST_CASE("no TLS options: disabled, nothing to check") {
  tls_options o;
  CHECK_FALSE(o.enabled());
  CHECK_NOTHROW(validate_tls(o));
}

TEST_CASE("validate_tls accepts a certificate signed by the CA") {
  if (!have_openssl())
    return;
  CHECK(good().enabled());
  CHECK_NOTHROW(validate_tls(good()));
}

TEST_CASE("validate_tls rejects partial options by name") {
  if (!have_openssl())
    return;
  auto o = good();
  o.ca.clear();
  CHECK(o.enabled());
  rejects(o, {"must be given together", "CA file"});
  o = good();
  o.key.clear();
  rejects(o, {"missing: private key"});
  rejects({file("node.pem"), "", ""}, {"private key, CA file"});
}

TEST_CASE("validate_tls rejects missing and unreadable files") {
  if (!have_openssl())
    return;
  auto o = good();
  o.cert = file("nope.pem");
  rejects(o, {"certificate file", "nope.pem", "does not exist"});
  o = good();
  o.ca = cert_dir();
  rejects(o, {"CA file", "is a directory"});
}

TEST_CASE("validate_tls rejects files that are not PEM") {
  if (!have_openssl())
    return;
  auto o = good();
  o.cert = file("garbage.pem");
  rejects(o, {"garbage.pem", "is not a PEM certificate"});
  o = good();
  o.cert = file("node.key");
  rejects(o, {"node.key", "swapped"});
  o = good();
  o.key = file("garbage.pem");
  rejects(o, {"garbage.pem", "is not a PEM private key"});
  o = good();
  o.ca = file("garbage.pem");
  rejects(o, {"CA file", "garbage.pem", "cannot be parsed"});
}

TEST_CASE("validate_tls rejects an encrypted key") {
  if (!have_openssl())
    return;
  auto o = good();
  o.key = file("node-enc.key");
  rejects(o, {"node-enc.key", "is encrypted"});
}

TEST_CASE("validate_tls rejects a key that does not match the certificate") {
  if (!have_openssl())
    return;
  rejects({file("wrong.pem"), file("node.key"), file("wrong-ca.pem")},
          {"node.key", "does not match the certificate", "wrong.pem"});
}

TEST_CASE("validate_tls rejects a certificate from another CA") {
  if (!have_openssl())
    return;
  rejects({file("wrong.pem"), file("wrong.key"), file("ca.pem")},
          {"wrong.pem", "is not signed by the CA", "ca.pem"});
  // and the other way round: our node against the unrelated CA
  rejects({file("node.pem"), file("node.key"), file("wrong-ca.pem")},
          {"node.pem", "is not signed by the CA", "wrong-ca.pem"});
}

TEST_CASE("validate_tls rejects an expired certificate") {
  if (!have_openssl())
    return;
  if (!std::filesystem::exists(file("expired.pem"))) {
    WARN("openssl made no expired certificate: case skipped");
    return;
  }
  rejects({file("expired.pem"), file("expired.key"), file("ca.pem")},
          {"expired.pem", "has expired"});
}

TEST_CASE("apply_tls: two actor systems talk over TLS") {
  if (!have_openssl())
    return;
  auto make_cfg = [](const tls_options& o) {
    auto cfg = std::make_unique<caf::actor_system_config>();
    cfg->load<caf::io::middleman>();
    apply_tls(*cfg, o);
    return cfg;
  };
  auto server_cfg = make_cfg(good());
  CHECK(server_cfg->openssl_certificate == good().cert);
  CHECK(server_cfg->openssl_key == good().key);
  CHECK(server_cfg->openssl_cafile == good().ca);
  caf::actor_system server{*server_cfg};
  auto echo = server.spawn(
      []() -> caf::behavior { return {[](int x) { return x + 1; }}; });
  auto port = caf::openssl::publish(echo, 0, "127.0.0.1");
  REQUIRE(port);

  auto client_cfg = make_cfg(good());
  caf::actor_system client{*client_cfg};
  auto remote = caf::openssl::remote_actor(client, "127.0.0.1", *port);
  REQUIRE(remote);
  caf::scoped_actor self{client};
  int answer = 0;
  self->request(*remote, std::chrono::seconds(10), 41)
      .receive([&](int y) { answer = y; },
               [&](caf::error& e) { FAIL(client.render(e)); });
  CHECK(answer == 42);
  caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
}
