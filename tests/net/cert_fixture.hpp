// Throwaway certificates for the TLS tests: tests/net/make_certs.sh, run
// once per test program into a temp dir that is removed at exit, plus
// both-ca.pem, a CA file trusting both of its CAs (a node with wrong.pem
// then passes its own checks, yet a coordinator trusting ca.pem alone
// refuses it).

#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

namespace troupe::test {

/// The temp dir holding the certificates; empty when the openssl command
/// line tool is missing (the TLS tests are skipped then).
inline const std::string& cert_dir() {
  struct fixture {
    std::string dir;
    fixture() {
      if (std::system("command -v openssl >/dev/null 2>&1") != 0)
        return;
      auto base = std::filesystem::temp_directory_path();
      std::string templ = (base / "troupe-tls-XXXXXX").string();
      if (mkdtemp(templ.data()) == nullptr)
        throw std::runtime_error("mkdtemp failed");
      dir = templ;
      std::string cmd = std::string{"bash '"} + TROUPE_SOURCE_DIR
                        + "/tests/net/make_certs.sh' '" + dir + "' >/dev/null";
      if (std::system(cmd.c_str()) != 0)
        throw std::runtime_error("make_certs.sh failed");
      std::ofstream both{dir + "/both-ca.pem"};
      both << std::ifstream{dir + "/ca.pem"}.rdbuf()
           << std::ifstream{dir + "/wrong-ca.pem"}.rdbuf();
    }
    ~fixture() {
      std::error_code ec;
      if (!dir.empty())
        std::filesystem::remove_all(dir, ec);
    }
  };
  static const fixture f;
  return f.dir;
}

} // namespace troupe::test
