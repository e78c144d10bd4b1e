#pragma once

// Shared by the two translation units of the remote_transfer benchmark: the
// command-line options of every role, and the CAF roles (remote_transfer_caf
// .cpp, the only file that includes CAF).

#include <cstddef>
#include <cstdint>
#include <string>

namespace troupe::bench {

/// Options of all roles, parsed from `--name=value` arguments.
struct options {
  /// driver (default), server, client or raw-server.
  std::string role = "driver";
  /// server, raw-server: port to bind (0: any); client: the server's port.
  std::uint16_t port = 0;
  /// Bytes of the parameter range moved by one push or pull.
  std::size_t bytes = std::size_t{16} << 20;
  /// Bytes of one push_msg / params_msg (bytes must be a multiple).
  std::size_t chunk = std::size_t{16} << 20;
  /// Requests in flight at once.
  std::size_t inflight = 1;
  /// Timed transfers per phase, after `warmup` untimed ones.
  std::size_t reps = 8;
  std::size_t warmup = 2;
  /// Timed tiny round trips per phase (after 10% warm-up).
  std::size_t rtt_iters = 2000;
  /// scheduler.policy ("" keeps CAF's default, stealing).
  std::string policy;
  /// middleman.workers (-1 keeps CAF's default).
  long mm_workers = -1;
  /// middleman.max-consecutive-reads (-1 keeps CAF's default, 50).
  long mcr = -1;
  /// scheduler.max-threads.
  long threads = 2;
  /// Directory with ca.pem, cert.pem and key.pem: TLS through caf::openssl.
  std::string tls_dir;
  /// driver: iperf3 executable ("" skips the iperf3 baseline).
  std::string iperf3;
  /// driver: TLS material for the TLS phases ("" skips them).
  std::string tls_material;
  /// driver: measurement rounds; every round runs every phase once.
  std::size_t rounds = 3;
  /// driver: only run configurations whose name contains this.
  std::string only;
  /// driver: seconds one phase (a client and a server process) may take.
  double phase_timeout = 90;
  /// Socket send/receive timeout of the raw TCP baselines, seconds.
  int io_timeout = 20;
};

/// Parses `--name=value` arguments; throws std::invalid_argument.
options parse_options(int argc, char** argv);

/// The CAF server: publishes an actor that acks push_msg, answers fetch_msg
/// with params_msg and echoes tiny requests; prints "port N" on stdout and
/// runs until the client sends stop or 10 minutes pass. Returns the exit code.
int run_caf_server(const options& opts);

/// The CAF client: connects to the server, times push, pull and round trips,
/// and prints one JSON line on stdout. Returns the exit code.
int run_caf_client(const options& opts);

} // namespace troupe::bench
