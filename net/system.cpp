#include "net/system.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <unistd.h>

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/io/middleman.hpp>

#include "actors/job.hpp"
#include "messages/registry.hpp"
#include "messages/shm.hpp"

namespace troupe::net {

endpoint parse_endpoint(const std::string& text, const std::string& flag) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(flag + "=" + text + ": " + why
                                + " (expected HOST:PORT)");
  };
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    fail("no host");
  endpoint e;
  e.host = text.substr(0, colon);
  if (e.host.size() > 2 && e.host.front() == '[' && e.host.back() == ']')
    e.host = e.host.substr(1, e.host.size() - 2);
  auto port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5
      || !std::all_of(port.begin(), port.end(),
                      [](char c) { return c >= '0' && c <= '9'; }))
    fail("bad port");
  auto value = std::stoul(port);
  if (value > 65535)
    fail("port above 65535");
  e.port = static_cast<std::uint16_t>(value);
  return e;
}

std::uint64_t link_options::heartbeat_ms() const {
  return static_cast<std::uint64_t>(std::llround(heartbeat * 1000));
}

std::uint64_t link_options::timeout_ms() const {
  return static_cast<std::uint64_t>(std::llround(node_timeout * 1000));
}

void validate(const link_options& opts) {
  if (!(opts.heartbeat >= 0.01 && opts.heartbeat <= 60))
    throw std::invalid_argument("--heartbeat must be in [0.01, 60] seconds");
  if (!(opts.node_timeout >= 2 * opts.heartbeat && opts.node_timeout <= 3600))
    throw std::invalid_argument("--node-timeout must be at least twice "
                                "--heartbeat (and at most 3600 seconds)");
  validate_tls(opts.tls);
}

void configure(caf::actor_system_config& cfg, const link_options& opts,
               std::size_t threads) {
  messages::register_types(cfg);
  if (threads == 0)
    threads = std::max<std::size_t>(std::thread::hardware_concurrency(), 2);
  cfg.set("scheduler.max-threads", threads);
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.load<caf::io::middleman>();
  // No separate deserialization threads: on 2 cores the multiplexer thread
  // doing it itself moved a 16 MB push at 0.96x iperf3's loopback bandwidth
  // (1.18 GB/s -> 1.87 GB/s with the sharing scheduler) and cut a tiny round
  // trip from 305 to 100 us (bench/remote_transfer).
  cfg.set("middleman.workers", std::size_t{0});
  // Heartbeats make a hung peer (SIGSTOP, a frozen host) detectable; both
  // ends must use the same settings (the join handshake checks it).
  cfg.set("middleman.heartbeat-interval",
          caf::timespan{std::chrono::milliseconds{opts.heartbeat_ms()}});
  cfg.set("middleman.connection-timeout",
          caf::timespan{std::chrono::milliseconds{opts.timeout_ms()}});
  apply_tls(cfg, opts.tls);
  // --shm (default on), unless TROUPE_SHM=0 or 1 in the environment says
  // otherwise (the tests' switch).
  const char* env = std::getenv("TROUPE_SHM");
  bool on = opts.shm;
  if (env != nullptr && std::string{env} == "0")
    on = false;
  if (env != nullptr && std::string{env} == "1")
    on = true;
  messages::shm::set_enabled(on);
}

std::string read_token_file(const std::string& path) {
  std::ifstream in{path};
  if (!in)
    throw std::invalid_argument("--token-file=" + path + ": cannot be read");
  std::string line;
  std::getline(in, line);
  auto first = line.find_first_not_of(" \t\r\n");
  auto last = line.find_last_not_of(" \t\r\n");
  if (first == std::string::npos)
    throw std::invalid_argument("--token-file=" + path + ": empty");
  return line.substr(first, last - first + 1);
}

bool tokens_equal(const std::string& x, const std::string& y) {
  unsigned char diff = x.size() == y.size() ? 0 : 1;
  auto n = std::max(x.size(), y.size());
  for (std::size_t i = 0; i < n; ++i) {
    auto a = i < x.size() ? static_cast<unsigned char>(x[i]) : 0;
    auto b = i < y.size() ? static_cast<unsigned char>(y[i]) : 0;
    diff = static_cast<unsigned char>(diff | (a ^ b));
  }
  return diff == 0;
}

std::string process_name() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0)
    std::snprintf(host, sizeof(host), "unknown");
  return std::string{host} + ":" + std::to_string(getpid());
}

} // namespace troupe::net
