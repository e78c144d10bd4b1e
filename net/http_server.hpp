// A small HTTP/1.1 server on Boost.Beast for the monitoring endpoint: GET
// routes answered on the server's own thread, an optional bearer token, and
// limits that keep malformed requests and slow clients from holding it.

#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "net/system.hpp"

namespace troupe::net {

/// What a route answers.
struct http_response {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

/// Answers a GET of one path (the query string, if any, is passed on).
/// Runs on the server's thread: it must only read thread-safe state.
using http_handler = std::function<http_response(const std::string& query)>;

struct http_options {
  endpoint listen{"127.0.0.1", 0};
  /// Empty: no token. Else every request needs `Authorization: Bearer T`.
  std::string token;
  /// Paths served without the token (pages that carry no data themselves,
  /// like the dashboard, which sends the token on its API calls).
  std::set<std::string> public_paths;
  /// A request's header must arrive within this time, and a response be
  /// taken within it; idle keep-alive connections close after it.
  std::chrono::milliseconds timeout{std::chrono::seconds{10}};
  std::uint32_t max_connections = 64;
  std::uint32_t max_header_bytes = 8192;
};

/// Counters, for tests and the endpoint's own metrics.
struct http_counters {
  std::uint64_t requests = 0, bad_requests = 0, unauthorized = 0;
  std::uint64_t timed_out = 0, refused = 0;
};

class http_server {
public:
  /// Starts listening (throws std::runtime_error naming the address if it
  /// cannot) and serves on a thread of its own until destroyed.
  http_server(http_options opts, std::map<std::string, http_handler> routes);
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// The port it listens on (useful with port 0).
  std::uint16_t port() const noexcept;

  http_counters counters() const;

private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

} // namespace troupe::net
