#pragma once

// What the TLS front (tls_front.cpp) and the TLS probe (tls_probe.cpp) share
// about OpenSSL: owning pointers, the thread's error queue in words, and the
// milliseconds left before a deadline for poll(2).

#include <algorithm>
#include <chrono>
#include <memory>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <string>
#include <vector>

namespace troupe::net::detail {

struct ssl_ctx_free {
  void operator()(SSL_CTX* p) const {
    SSL_CTX_free(p);
  }
};
struct ssl_free {
  void operator()(SSL* p) const {
    SSL_free(p);
  }
};
using ssl_ctx_ptr = std::unique_ptr<SSL_CTX, ssl_ctx_free>;
using ssl_ptr = std::unique_ptr<SSL, ssl_free>;

/// Milliseconds left until `deadline` (at least 0, at most 2^30).
inline int left_ms(std::chrono::steady_clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now())
                .count();
  return ms > 0 ? static_cast<int>(std::min<long long>(ms, 1 << 30)) : 0;
}

/// OpenSSL's errors queued on this thread, oldest first, then cleared.
inline std::vector<unsigned long> ssl_errors() {
  std::vector<unsigned long> codes;
  while (auto code = ERR_get_error())
    codes.push_back(code);
  return codes;
}

/// The reasons of `codes` in words, each once.
inline std::string ssl_reasons(const std::vector<unsigned long>& codes) {
  std::string out;
  for (auto code : codes) {
    const char* r = ERR_reason_error_string(code);
    auto text = r != nullptr ? std::string{r}
                             : "error " + std::to_string(ERR_GET_REASON(code));
    if (out.find(text) == std::string::npos)
      out += (out.empty() ? "" : "; ") + text;
  }
  return out;
}

/// The reasons queued on this thread, in words, then cleared.
inline std::string ssl_reasons() {
  return ssl_reasons(ssl_errors());
}

} // namespace troupe::net::detail
