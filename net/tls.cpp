#include "net/tls.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <stdexcept>
#include <vector>

#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>

#include "optim/quote.hpp"

namespace troupe::net {

namespace {

struct bio_free {
  void operator()(BIO* p) const {
    BIO_free(p);
  }
};
struct x509_free {
  void operator()(X509* p) const {
    X509_free(p);
  }
};
struct pkey_free {
  void operator()(EVP_PKEY* p) const {
    EVP_PKEY_free(p);
  }
};
struct store_free {
  void operator()(X509_STORE* p) const {
    X509_STORE_free(p);
  }
};
struct store_ctx_free {
  void operator()(X509_STORE_CTX* p) const {
    X509_STORE_CTX_free(p);
  }
};
struct stack_free {
  void operator()(STACK_OF(X509) * p) const {
    sk_X509_free(p); // the certificates themselves are owned elsewhere
  }
};

using bio_ptr = std::unique_ptr<BIO, bio_free>;
using x509_ptr = std::unique_ptr<X509, x509_free>;
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_free>;

[[noreturn]] void fail(const std::string& msg) {
  ERR_clear_error(); // leave no stale OpenSSL errors behind for CAF
  throw std::invalid_argument("TLS: " + msg);
}

/// A path in a message: quoted, escaped, long ones cut.
std::string quoted(const std::string& path) {
  return optim::quote(path, 256);
}

/// Reads a whole file; `what` names it in errors ("certificate file").
std::string read_file(const std::string& what, const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    fail(what + " " + quoted(path) + " does not exist");
  if (std::filesystem::is_directory(path, ec))
    fail(what + " " + quoted(path) + " is a directory");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    fail(what + " " + quoted(path)
         + " cannot be read: " + std::strerror(errno));
  std::string text;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    text.append(buf, n);
  bool err = std::ferror(f) != 0;
  int saved = errno;
  std::fclose(f);
  if (err)
    fail(what + " " + quoted(path)
         + " cannot be read: " + std::strerror(saved));
  if (text.empty())
    fail(what + " " + quoted(path) + " is empty");
  return text;
}

bio_ptr memory_bio(const std::string& text) {
  return bio_ptr{BIO_new_mem_buf(text.data(), static_cast<int>(text.size()))};
}

/// Every PEM certificate in `text`, in file order (stops at the first block
/// that is not one).
std::vector<x509_ptr> read_certs(const std::string& text) {
  std::vector<x509_ptr> certs;
  auto bio = memory_bio(text);
  while (X509* c = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr))
    certs.emplace_back(c);
  ERR_clear_error(); // the end-of-input "no start line" error
  return certs;
}

/// A password callback that refuses: OpenSSL must never prompt a terminal.
int no_passphrase(char*, int, int, void*) {
  return -1;
}

std::string asn1_time(const ASN1_TIME* t) {
  bio_ptr bio{BIO_new(BIO_s_mem())};
  ASN1_TIME_print(bio.get(), t);
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(len));
}

void check_dates(const std::string& what, const std::string& path, X509* c) {
  if (X509_cmp_current_time(X509_get0_notBefore(c)) > 0)
    fail(what + " " + quoted(path) + " is not valid yet (not before "
         + asn1_time(X509_get0_notBefore(c)) + ")");
  if (X509_cmp_current_time(X509_get0_notAfter(c)) < 0)
    fail(what + " " + quoted(path) + " has expired (not after "
         + asn1_time(X509_get0_notAfter(c)) + ")");
}

bool is_not_signed_error(int code) {
  switch (code) {
  case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
  case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
  case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
  case X509_V_ERR_CERT_SIGNATURE_FAILURE:
  case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
  case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    return true;
  default:
    return false;
  }
}

/// X509_verify_cert of the leaf (plus any chain from the cert file) against
/// a store holding exactly the CA file's certificates.
void verify_chain(const tls_options& o, const std::vector<x509_ptr>& chain,
                  const std::vector<x509_ptr>& cas) {
  std::unique_ptr<X509_STORE, store_free> store{X509_STORE_new()};
  for (auto& ca : cas)
    X509_STORE_add_cert(store.get(), ca.get());
  std::unique_ptr<STACK_OF(X509), stack_free> untrusted{sk_X509_new_null()};
  for (size_t i = 1; i < chain.size(); ++i)
    sk_X509_push(untrusted.get(), chain[i].get());
  std::unique_ptr<X509_STORE_CTX, store_ctx_free> ctx{X509_STORE_CTX_new()};
  if (!store || !untrusted || !ctx
      || X509_STORE_CTX_init(ctx.get(), store.get(), chain[0].get(),
                             untrusted.get())
             != 1)
    fail("out of memory while verifying " + quoted(o.cert));
  if (X509_verify_cert(ctx.get()) == 1) {
    ERR_clear_error();
    return;
  }
  int code = X509_STORE_CTX_get_error(ctx.get());
  int depth = X509_STORE_CTX_get_error_depth(ctx.get());
  std::string reason = X509_verify_cert_error_string(code);
  if (is_not_signed_error(code))
    fail("certificate file " + quoted(o.cert) + " is not signed by the CA in "
         + quoted(o.ca) + " (" + reason + ")");
  fail("certificate file " + quoted(o.cert)
       + " does not verify against the CA in " + quoted(o.ca) + ": " + reason
       + " (at chain depth " + std::to_string(depth) + ")");
}

} // namespace

void validate_tls(const tls_options& o) {
  if (!o.enabled())
    return;
  if (o.cert.empty() || o.key.empty() || o.ca.empty()) {
    std::string missing;
    for (auto [value, name] :
         {std::pair{&o.cert, "certificate"}, std::pair{&o.key, "private key"},
          std::pair{&o.ca, "CA file"}})
      if (value->empty())
        missing += (missing.empty() ? "" : ", ") + std::string{name};
    fail("a certificate, its private key and a CA file must be given "
         "together; missing: "
         + missing);
  }

  auto cert_text = read_file("certificate file", o.cert);
  auto key_text = read_file("private key file", o.key);
  auto ca_text = read_file("CA file", o.ca);

  auto chain = read_certs(cert_text);
  if (chain.empty()) {
    std::string hint = cert_text.find("PRIVATE KEY") != std::string::npos
                           ? " (it holds a private key: are certificate and "
                             "key swapped?)"
                           : "";
    fail("certificate file " + quoted(o.cert) + " is not a PEM certificate"
         + hint);
  }

  if (key_text.find("ENCRYPTED") != std::string::npos)
    fail("private key file " + quoted(o.key)
         + " is encrypted; passphrase-protected keys are not supported "
           "(decrypt it with 'openssl pkey -in KEY -out KEY.plain')");
  pkey_ptr key;
  {
    auto bio = memory_bio(key_text);
    key.reset(
        PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
  }
  if (!key)
    fail("private key file " + quoted(o.key) + " is not a PEM private key");
  if (X509_check_private_key(chain[0].get(), key.get()) != 1)
    fail("private key file " + quoted(o.key)
         + " does not match the certificate in " + quoted(o.cert));

  auto cas = read_certs(ca_text);
  if (cas.empty())
    fail("CA file " + quoted(o.ca)
         + " cannot be parsed: it holds no PEM certificate");

  check_dates("certificate file", o.cert, chain[0].get());
  verify_chain(o, chain, cas);
}

void apply_tls(caf::actor_system_config& cfg, const tls_options& o) {
  if (!o.enabled())
    return;
  cfg.load<caf::openssl::manager>();
  // set() updates the config dictionary; the fields are what
  // caf::openssl::session reads when it creates its SSL context.
  cfg.set("openssl.certificate", o.cert);
  cfg.set("openssl.key", o.key);
  cfg.set("openssl.cafile", o.ca);
  cfg.openssl_certificate = o.cert;
  cfg.openssl_key = o.key;
  cfg.openssl_cafile = o.ca;
}

} // namespace troupe::net
